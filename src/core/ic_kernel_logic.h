/*
 * ic_kernel_logic: the element-level logic shared by the host and the GPU: the seeded
 * pattern, element addressing through byte strides, and element comparison.
 *
 * Contract
 * - Everything here is a pure function of its arguments, written once and compiled twice:
 *   by the C compiler for the host (ic_pattern.c, ic_view.c, the CUDA stand-in's kernels) and
 *   by nvcc for the verification kernels (src/gpu/kernels/). A host and a device check of the same
 *   view therefore agree bit for bit.
 * - The pattern is index-addressable: element k of a base of `count` elements is a function
 *   of (seed, value class, itemsize, k, count) alone, so a kernel can check any view of the
 *   base without the base being uploaded.
 * - No allocation, no globals, no library calls (nothing a device function cannot do).
 */
#ifndef IC_KERNEL_LOGIC_H
#define IC_KERNEL_LOGIC_H

#ifdef __CUDACC__
#define IC_HD __host__ __device__ __forceinline__
#else
#include <stdbool.h>
#include <stdint.h>
#define IC_HD static inline
#endif

/* Value classes; the numbering is ic_dtype.h's enum ic_value_class. */
#define IC_LOGIC_BOOL 0
#define IC_LOGIC_INT 1
#define IC_LOGIC_UINT 2
#define IC_LOGIC_FLOAT 3
#define IC_LOGIC_BFLOAT 4
#define IC_LOGIC_COMPLEX 5
#define IC_LOGIC_FLOAT8_E4M3FN 6 /* 4 exponent bits, 3 mantissa bits, no infinities */
#define IC_LOGIC_FLOAT8_E5M2 7   /* 5 exponent bits, 2 mantissa bits, IEEE-like */
#define IC_LOGIC_NIBBLE 8        /* 4-bit integers (int4, uint4): one a byte, in its low half */
#define IC_LOGIC_LAST IC_LOGIC_NIBBLE

/* How two elements compare: their bytes; as truth values (any non-zero byte is a true bool);
 * or by their low four bits, since a byte holding a 4-bit integer may carry anything in its
 * high half (ml_dtypes leaves it zero, a torch int8 tensor viewed as int4 sign-extends). */
#define IC_LOGIC_CMP_BYTES 0
#define IC_LOGIC_CMP_TRUTH 1
#define IC_LOGIC_CMP_NIBBLE 2

/* splitmix64's finaliser: well distributed, cheap, and the same everywhere. */
IC_HD uint64_t ic_logic_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A float of `bits` total with `exp_bits` exponent bits whose exponent lies within `spread`
 * of the bias: finite, normal, and far from overflow in any conversion between widths. */
IC_HD uint64_t ic_logic_float_bits(uint64_t r, int bits, int exp_bits, int spread)
{
    int mant_bits = bits - 1 - exp_bits;
    uint64_t bias = (1ULL << (exp_bits - 1)) - 1;
    uint64_t exponent = bias - (uint64_t)spread + (r >> 40) % (uint64_t)(2 * spread + 1);
    uint64_t mantissa = r & ((1ULL << mant_bits) - 1);
    uint64_t sign = (r >> 63) & 1;
    return (sign << (bits - 1)) | (exponent << mant_bits) | mantissa;
}

IC_HD void ic_logic_store(unsigned char *dst, uint64_t value, int size)
{
    /* Little-endian byte order, which is the native order of every platform the tester runs
     * on (x86-64, aarch64, NVIDIA GPUs); written byte by byte so it needs no alignment. */
    for (int i = 0; i < size; i++)
        dst[i] = (unsigned char)(value >> (8 * i));
}

IC_HD uint64_t ic_logic_draw(uint64_t seed, int64_t index, int lane)
{
    return ic_logic_mix(seed ^ ic_logic_mix((uint64_t)index * 2 + (uint64_t)lane));
}

IC_HD uint64_t ic_logic_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* An 8-bit float with `exp_bits` exponent bits: the finite normal codes whose exponent lies
 * within `spread` of the bias, walked from a random start in a random step prime to their
 * number, so that neighbours (and any run shorter than that number) differ, as for the narrow
 * integers: 256 codes leave random draws too likely to repeat. */
IC_HD unsigned char ic_logic_float8(uint64_t seed, int64_t index, int exp_bits, int spread)
{
    int mant_bits = 7 - exp_bits;
    uint64_t mantissas = 1ULL << mant_bits, exponents = (uint64_t)(2 * spread + 1);
    uint64_t codes = 2 * mantissas * exponents;
    uint64_t step = ic_logic_draw(seed, -2, 0) % codes | 1;
    while (ic_logic_gcd(step, codes) != 1)
        step += 2;
    uint64_t k = (ic_logic_draw(seed, -1, 0) + (uint64_t)index * step) % codes;
    uint64_t bias = (1ULL << (exp_bits - 1)) - 1;
    uint64_t sign = k & 1, mantissa = (k >> 1) % mantissas;
    uint64_t exponent = bias - (uint64_t)spread + (k >> 1) / mantissas;
    return (unsigned char)((sign << 7) | (exponent << mant_bits) | mantissa);
}

/* Writes element `index` of the pattern of a base of `count` elements into `dst`.
 * - bool: random 0/1, except that the first element is 1 and the last 0, so the base is not
 *   a palindrome;
 * - 1- and 2-byte integers: an arithmetic sequence with an odd step from a random start, so
 *   neighbours (and any 256 / 65536 consecutive elements) differ; 4-bit ones likewise modulo 16,
 *   stored in the low half of a zero byte; 8-bit floats likewise over
 *   their finite normal codes of moderate exponent;
 * - wider integers, floats (finite, normal, moderate exponents; the float8 kinds too) and
 *   complex parts: random.
 * The first and last elements differ for every dtype. */
IC_HD void ic_logic_pattern_raw(unsigned char *dst, int value_class, int itemsize,
                                uint64_t seed, int64_t index, int64_t count)
{
    uint64_t r = ic_logic_draw(seed, index, 0);
    switch (value_class) {
    case IC_LOGIC_BOOL: {
        unsigned char bit = (unsigned char)((r >> 33) & 1);
        if (index == 0)
            bit = 1;
        else if (index == count - 1)
            bit = 0;
        dst[0] = bit;
        break;
    }
    case IC_LOGIC_INT:
    case IC_LOGIC_UINT:
        if (itemsize <= 2) {
            uint64_t start = ic_logic_draw(seed, -1, 0);
            uint64_t step = ic_logic_draw(seed, -2, 0) | 1;
            ic_logic_store(dst, start + (uint64_t)index * step, itemsize);
        } else {
            ic_logic_store(dst, r, itemsize);
        }
        break;
    case IC_LOGIC_FLOAT:
        if (itemsize == 2)
            ic_logic_store(dst, ic_logic_float_bits(r, 16, 5, 12), 2);
        else if (itemsize == 4)
            ic_logic_store(dst, ic_logic_float_bits(r, 32, 8, 40), 4);
        else
            ic_logic_store(dst, ic_logic_float_bits(r, 64, 11, 200), 8);
        break;
    case IC_LOGIC_BFLOAT:
        ic_logic_store(dst, ic_logic_float_bits(r, 16, 8, 40), 2);
        break;
    case IC_LOGIC_NIBBLE: {
        /* as the narrow integers, over the sixteen values of the low half */
        uint64_t start = ic_logic_draw(seed, -1, 0);
        uint64_t step = ic_logic_draw(seed, -2, 0) | 1;
        dst[0] = (unsigned char)((start + (uint64_t)index * step) & 0xF);
        break;
    }
    case IC_LOGIC_FLOAT8_E4M3FN:
        /* exponents within 5 of the bias (7): never the all-ones one, whose top mantissa is NaN */
        dst[0] = ic_logic_float8(seed, index, 4, 5);
        break;
    case IC_LOGIC_FLOAT8_E5M2:
        dst[0] = ic_logic_float8(seed, index, 5, 10);
        break;
    default: { /* complex: two floats of half the size */
        uint64_t r2 = ic_logic_draw(seed, index, 1);
        if (itemsize == 8) {
            ic_logic_store(dst, ic_logic_float_bits(r, 32, 8, 40), 4);
            ic_logic_store(dst + 4, ic_logic_float_bits(r2, 32, 8, 40), 4);
        } else {
            ic_logic_store(dst, ic_logic_float_bits(r, 64, 11, 200), 8);
            ic_logic_store(dst + 8, ic_logic_float_bits(r2, 64, 11, 200), 8);
        }
        break;
    }
    }
}

IC_HD void ic_logic_pattern(unsigned char *dst, int value_class, int itemsize, uint64_t seed,
                            int64_t index, int64_t count)
{
    ic_logic_pattern_raw(dst, value_class, itemsize, seed, index, count);
    /* Wide random values could in principle repeat end to end: flip the lowest bit (which
     * keeps a float finite and normal) so that the last element never equals the first. */
    if (count >= 2 && index == count - 1 && value_class != IC_LOGIC_BOOL &&
        value_class != IC_LOGIC_NIBBLE && !(value_class <= IC_LOGIC_UINT && itemsize <= 2)) {
        unsigned char first[16];
        ic_logic_pattern_raw(first, value_class, itemsize, seed, 0, count);
        bool same = true;
        for (int i = 0; i < itemsize; i++)
            same = same && first[i] == dst[i];
        if (same)
            dst[0] ^= 1;
    }
}

/* Byte offset of the element at the C-order linear `index` of a view. */
IC_HD int64_t ic_logic_offset(int64_t index, int ndim, const int64_t *shape,
                              const int64_t *strides)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        int64_t extent = shape[d];
        offset += (index % extent) * strides[d];
        index /= extent;
    }
    return offset;
}

/* The way elements of two value classes compare (IC_LOGIC_CMP_*): truth values when both are
 * bools, low halves when both are 4-bit integers, bytes otherwise. */
IC_HD int ic_logic_compare_mode(int class_a, int class_b)
{
    if (class_a == IC_LOGIC_BOOL && class_b == IC_LOGIC_BOOL)
        return IC_LOGIC_CMP_TRUTH;
    if (class_a == IC_LOGIC_NIBBLE && class_b == IC_LOGIC_NIBBLE)
        return IC_LOGIC_CMP_NIBBLE;
    return IC_LOGIC_CMP_BYTES;
}

/* Element equality in one of the IC_LOGIC_CMP_* modes. */
IC_HD bool ic_logic_equal(const unsigned char *a, const unsigned char *b, int itemsize, int mode)
{
    if (mode == IC_LOGIC_CMP_TRUTH)
        return (a[0] != 0) == (b[0] != 0);
    if (mode == IC_LOGIC_CMP_NIBBLE)
        return ((a[0] ^ b[0]) & 0xF) == 0;
    for (int i = 0; i < itemsize; i++) {
        if (a[i] != b[i])
            return false;
    }
    return true;
}

#endif
