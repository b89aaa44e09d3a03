/*
 * ic_dtype: the element types interopcheck exchanges, and how each protocol spells them.
 *
 * Contract
 * - One table (IC_DTYPE_LIST) names every dtype the tester knows. Its order is the order of
 *   the matrix dimension and of reports; the names are the case-id spelling.
 * - Lookups are pure functions over static data: nothing to free, safe from any thread.
 * - Lookups that fail return a negative IC_E* code and leave the output untouched.
 * - Spellings follow ../shared/docs/protocols.md §7 (the cross-protocol dtype map): DLPack
 *   (code, bits), NumPy typestr kind + size, PEP 3118 native format.
 */
#ifndef IC_DTYPE_H
#define IC_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Value classes decide how the seeded pattern is generated: every pattern value is valid for
 * its dtype (bools are 0 or 1, floats are finite normal numbers), so a consumer that converts
 * or canonicalises values cannot turn a correct exchange into a false mismatch. */
enum ic_value_class {
    IC_VALUE_BOOL,
    IC_VALUE_INT,
    IC_VALUE_UINT,
    IC_VALUE_FLOAT,  /* IEEE binary16/32/64 */
    IC_VALUE_BFLOAT, /* bfloat16 */
    IC_VALUE_COMPLEX,
    IC_VALUE_FLOAT8_E4M3FN, /* OCP FP8 E4M3 (finite only) */
    IC_VALUE_FLOAT8_E5M2,   /* OCP FP8 E5M2 */
    IC_VALUE_NIBBLE,        /* 4-bit integers, one a byte in its low half (DLPack's padded) */
};

/* X(ENUM, name, itemsize, value class, DLPack code, DLPack bits, typestr kind, PEP 3118 format,
 *   Arrow format)
 * DLPack codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6.
 * A typestr kind of 0 means the array interface has no standard spelling (bfloat16). The 4-bit
 * integers are stored one a byte (torch, ml_dtypes): DLPack's padded sub-byte layout, which
 * only a versioned capsule can declare (DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED). The Arrow
 * format is the C data interface's (NULL: Arrow has no such primitive); Arrow's booleans ("b")
 * are bit-packed, not a byte each. */
#define IC_DTYPE_LIST(X)                                                                           \
    X(BOOL, "bool", 1, IC_VALUE_BOOL, 6, 8, 'b', "?", "b")                                         \
    X(INT8, "int8", 1, IC_VALUE_INT, 0, 8, 'i', "b", "c")                                          \
    X(INT16, "int16", 2, IC_VALUE_INT, 0, 16, 'i', "h", "s")                                       \
    X(INT32, "int32", 4, IC_VALUE_INT, 0, 32, 'i', "i", "i")                                       \
    X(INT64, "int64", 8, IC_VALUE_INT, 0, 64, 'i', "q", "l")                                       \
    X(UINT8, "uint8", 1, IC_VALUE_UINT, 1, 8, 'u', "B", "C")                                       \
    X(UINT16, "uint16", 2, IC_VALUE_UINT, 1, 16, 'u', "H", "S")                                    \
    X(UINT32, "uint32", 4, IC_VALUE_UINT, 1, 32, 'u', "I", "I")                                    \
    X(UINT64, "uint64", 8, IC_VALUE_UINT, 1, 64, 'u', "Q", "L")                                    \
    X(FLOAT16, "float16", 2, IC_VALUE_FLOAT, 2, 16, 'f', "e", "e")                                 \
    X(BFLOAT16, "bfloat16", 2, IC_VALUE_BFLOAT, 4, 16, 0, NULL, NULL)                              \
    X(FLOAT32, "float32", 4, IC_VALUE_FLOAT, 2, 32, 'f', "f", "f")                                 \
    X(FLOAT64, "float64", 8, IC_VALUE_FLOAT, 2, 64, 'f', "d", "g")                                 \
    X(COMPLEX64, "complex64", 8, IC_VALUE_COMPLEX, 5, 64, 'c', "Zf", NULL)                         \
    X(COMPLEX128, "complex128", 16, IC_VALUE_COMPLEX, 5, 128, 'c', "Zd", NULL)                     \
    X(FLOAT8_E4M3FN, "float8_e4m3fn", 1, IC_VALUE_FLOAT8_E4M3FN, 10, 8, 0, NULL, NULL)             \
    X(FLOAT8_E5M2, "float8_e5m2", 1, IC_VALUE_FLOAT8_E5M2, 12, 8, 0, NULL, NULL)               \
    X(INT4, "int4", 1, IC_VALUE_NIBBLE, 0, 4, 0, NULL, NULL)                                       \
    X(UINT4, "uint4", 1, IC_VALUE_NIBBLE, 1, 4, 0, NULL, NULL)

enum ic_dtype {
    IC_DTYPE_INVALID = 0,
#define IC_DTYPE_ENUM(e, name, size, cls, code, bits, kind, fmt, arrow) IC_DTYPE_##e,
    IC_DTYPE_LIST(IC_DTYPE_ENUM)
#undef IC_DTYPE_ENUM
        IC_DTYPE_END
};

#define IC_DTYPE_FIRST IC_DTYPE_BOOL
#define IC_DTYPE_COUNT (IC_DTYPE_END - 1)

struct ic_dtype_info {
    enum ic_dtype dtype;
    const char *name;
    int itemsize;
    enum ic_value_class value_class;
    uint8_t dl_code;
    uint8_t dl_bits;
    char typestr_kind;   /* 0 when the array interface cannot spell it */
    const char *pep3118; /* native format, NULL when PEP 3118 has no code */
    const char *arrow;   /* the Arrow C data interface's format, NULL when Arrow has none */
};

/* Table entry of a valid dtype; NULL for IC_DTYPE_INVALID or an out-of-range value. */
const struct ic_dtype_info *ic_dtype_info(enum ic_dtype dtype);

/* Name of a dtype ("float32"); "invalid" for anything not in the table. */
const char *ic_dtype_name(enum ic_dtype dtype);

/* Dtype from its case-id name. IC_ENOTFOUND if unknown. */
int ic_dtype_from_name(const char *name, enum ic_dtype *ret);

/* Dtype from a DLPack (code, bits, lanes). IC_ENOTFOUND when the combination is not one the
 * tester exchanges (it may still be legal DLPack, e.g. float8: the validator decides that). */
int ic_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, enum ic_dtype *ret);

/* Dtype from an array-interface kind character and byte size ('f', 4). IC_ENOTFOUND if none. */
int ic_dtype_from_typestr_kind(char kind, long size, enum ic_dtype *ret);

#endif
