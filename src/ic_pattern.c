#include "ic_pattern.h"

#include <string.h>

/* splitmix64: small, fast, and well distributed; the pattern needs no more. */
static uint64_t ic_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t ic_pattern_seed(uint64_t run_seed, const char *case_id)
{
    uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)case_id; *p; p++)
        hash = (hash ^ *p) * 0x100000001b3ULL;
    uint64_t state = run_seed ^ hash;
    return ic_next(&state);
}

/* A float of `bits` total with `exp_bits` exponent bits whose exponent lies within `spread`
 * of the bias: finite, normal, and far from overflow in any conversion between widths. */
static uint64_t ic_float_bits(uint64_t r, int bits, int exp_bits, int spread)
{
    int mant_bits = bits - 1 - exp_bits;
    uint64_t bias = (1ULL << (exp_bits - 1)) - 1;
    uint64_t exponent = bias - (uint64_t)spread + (r >> 40) % (uint64_t)(2 * spread + 1);
    uint64_t mantissa = r & ((1ULL << mant_bits) - 1);
    uint64_t sign = (r >> 63) & 1;
    return (sign << (bits - 1)) | (exponent << mant_bits) | mantissa;
}

static void ic_store(unsigned char *dst, uint64_t value, int size)
{
    /* Native byte order, as the protocols require. */
    switch (size) {
    case 1: {
        uint8_t v = (uint8_t)value;
        memcpy(dst, &v, 1);
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)value;
        memcpy(dst, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)value;
        memcpy(dst, &v, 4);
        break;
    }
    default:
        memcpy(dst, &value, 8);
    }
}

static void ic_fill_one(unsigned char *dst, const struct ic_dtype_info *info, uint64_t *state)
{
    uint64_t r = ic_next(state);
    switch (info->value_class) {
    case IC_VALUE_BOOL:
        dst[0] = (unsigned char)(r >> 33 & 1);
        break;
    case IC_VALUE_INT:
    case IC_VALUE_UINT:
        ic_store(dst, r, info->itemsize);
        break;
    case IC_VALUE_FLOAT:
        if (info->itemsize == 2)
            ic_store(dst, ic_float_bits(r, 16, 5, 12), 2);
        else if (info->itemsize == 4)
            ic_store(dst, ic_float_bits(r, 32, 8, 40), 4);
        else
            ic_store(dst, ic_float_bits(r, 64, 11, 200), 8);
        break;
    case IC_VALUE_BFLOAT:
        ic_store(dst, ic_float_bits(r, 16, 8, 40), 2);
        break;
    case IC_VALUE_COMPLEX: {
        int half = info->itemsize / 2;
        uint64_t r2 = ic_next(state);
        if (half == 4) {
            ic_store(dst, ic_float_bits(r, 32, 8, 40), 4);
            ic_store(dst + 4, ic_float_bits(r2, 32, 8, 40), 4);
        } else {
            ic_store(dst, ic_float_bits(r, 64, 11, 200), 8);
            ic_store(dst + 8, ic_float_bits(r2, 64, 11, 200), 8);
        }
        break;
    }
    }
}

void ic_pattern_fill(void *buf, int64_t count, enum ic_dtype dtype, uint64_t seed)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    if (!info || count <= 0)
        return;
    unsigned char *bytes = buf;
    size_t size = (size_t)info->itemsize;
    uint64_t state = seed;
    for (int64_t i = 0; i < count; i++) {
        unsigned char *dst = bytes + (size_t)i * size;
        /* Redraw an element equal to its predecessor, which keeps off-by-one views visible.
         * Bools have two values: they stay random (forcing a change would make them a
         * periodic 0,1,0,1 that a step-2 view cannot tell apart). */
        for (int attempt = 0; attempt < 8; attempt++) {
            ic_fill_one(dst, info, &state);
            if (i == 0 || info->value_class == IC_VALUE_BOOL ||
                memcmp(dst, dst - size, size) != 0)
                break;
        }
    }
    /* Not a palindrome: the first and last elements differ. */
    if (count >= 2) {
        unsigned char *last = bytes + (size_t)(count - 1) * size;
        if (memcmp(bytes, last, size) == 0) {
            if (info->value_class == IC_VALUE_BOOL)
                last[0] = (unsigned char)!bytes[0];
            else
                last[0] ^= 1; /* the lowest mantissa / integer bit: stays valid */
        }
    }
}
