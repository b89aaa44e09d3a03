#include "ic_pattern.h"

#include "ic_kernel_logic.h"

/* The value classes of ic_dtype.h and of the shared kernel logic are one numbering. */
_Static_assert(IC_VALUE_BOOL == IC_LOGIC_BOOL && IC_VALUE_INT == IC_LOGIC_INT &&
                   IC_VALUE_UINT == IC_LOGIC_UINT && IC_VALUE_FLOAT == IC_LOGIC_FLOAT &&
                   IC_VALUE_BFLOAT == IC_LOGIC_BFLOAT && IC_VALUE_COMPLEX == IC_LOGIC_COMPLEX &&
                   IC_VALUE_FLOAT8_E4M3FN == IC_LOGIC_FLOAT8_E4M3FN &&
                   IC_VALUE_FLOAT8_E5M2 == IC_LOGIC_FLOAT8_E5M2 &&
                   IC_VALUE_NIBBLE == IC_LOGIC_NIBBLE,
               "ic_value_class and ic_kernel_logic.h disagree");

uint64_t ic_pattern_seed(uint64_t run_seed, const char *case_id)
{
    uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)case_id; *p; p++)
        hash = (hash ^ *p) * 0x100000001b3ULL;
    return ic_logic_mix(run_seed ^ hash);
}

void ic_pattern_fill(void *buf, int64_t count, enum ic_dtype dtype, uint64_t seed)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    if (!info || count <= 0)
        return;
    unsigned char *bytes = buf;
    for (int64_t i = 0; i < count; i++)
        ic_logic_pattern(bytes + i * info->itemsize, (int)info->value_class, info->itemsize, seed,
                         i, count);
}
