#include "ic_error.h"

#include <stddef.h>

struct ic_error_entry {
    int code;
    const char *name;
    const char *message;
};

static const struct ic_error_entry ic_error_table[] = {
#define IC_ERROR_ROW(name, value, message) {(value), "E" #name, (message)},
    IC_ERROR_LIST(IC_ERROR_ROW)
#undef IC_ERROR_ROW
};

static const struct ic_error_entry *ic_error_find(int code)
{
    for (size_t i = 0; i < sizeof(ic_error_table) / sizeof(ic_error_table[0]); i++) {
        if (ic_error_table[i].code == code)
            return &ic_error_table[i];
    }
    return NULL;
}

const char *ic_strerror_name(int code)
{
    const struct ic_error_entry *entry = ic_error_find(code);
    return entry ? entry->name : "E?";
}

const char *ic_strerror(int code)
{
    const struct ic_error_entry *entry = ic_error_find(code);
    return entry ? entry->message : "unknown error";
}
