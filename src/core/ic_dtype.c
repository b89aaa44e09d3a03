#include "ic_dtype.h"

#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

static const struct ic_dtype_info ic_dtype_table[] = {
#define IC_DTYPE_ROW(e, name, size, cls, code, bits, kind, fmt, arrow)                             \
    {IC_DTYPE_##e, (name), (size), (cls), (code), (bits), (kind), (fmt), (arrow)},
    IC_DTYPE_LIST(IC_DTYPE_ROW)
#undef IC_DTYPE_ROW
};

const struct ic_dtype_info *ic_dtype_info(enum ic_dtype dtype)
{
    if (dtype < IC_DTYPE_FIRST || dtype >= IC_DTYPE_END)
        return NULL;
    return &ic_dtype_table[dtype - IC_DTYPE_FIRST];
}

const char *ic_dtype_name(enum ic_dtype dtype)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    return info ? info->name : "invalid";
}

int ic_dtype_from_name(const char *name, enum ic_dtype *ret)
{
    int i = IC_TABLE_FIND(ic_dtype_table, name, name);
    if (i < 0)
        return i;
    *ret = ic_dtype_table[i].dtype;
    return 0;
}

int ic_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, enum ic_dtype *ret)
{
    if (lanes != 1)
        return IC_ENOTFOUND;
    for (int i = 0; i < IC_DTYPE_COUNT; i++) {
        if (ic_dtype_table[i].dl_code == code && ic_dtype_table[i].dl_bits == bits) {
            *ret = ic_dtype_table[i].dtype;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}

int ic_dtype_from_typestr_kind(char kind, long size, enum ic_dtype *ret)
{
    if (kind == 0)
        return IC_ENOTFOUND;
    for (int i = 0; i < IC_DTYPE_COUNT; i++) {
        if (ic_dtype_table[i].typestr_kind == kind && ic_dtype_table[i].itemsize == size) {
            *ret = ic_dtype_table[i].dtype;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}
