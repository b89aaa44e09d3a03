/* Unit tests of ic_view: span, contiguity and the strided compare, on hand-built views over
 * local buffers. Each expected value is worked out by hand in the comment next to it. */
#include <stdint.h>
#include <string.h>

#include "ic_error.h"
#include "ic_view.h"
#include "tap.h"
#include "test_memory.h"

static void test_span_and_contiguity(void)
{
    int32_t buf[24];
    struct ic_view v = {.data = (uintptr_t)buf, .itemsize = 4, .ndim = 3, .shape = {2, 3, 4}};
    TAP_OK(ic_view_set_c_strides(&v) == 0 && v.strides[0] == 48 && v.strides[1] == 16 &&
               v.strides[2] == 4,
           "C strides of (2,3,4) int32 are (48,16,4)");
    int64_t lo, hi;
    TAP_OK(ic_view_span(&v, &lo, &hi) == 0 && lo == 0 && hi == 96, "span of (2,3,4) is [0,96)");
    TAP_OK(ic_view_is_c_contiguous(&v), "C strides are contiguous");

    struct ic_view t = v; /* permute (1,0,2): shape (3,2,4), strides (16,48,4) */
    t.shape[0] = 3, t.shape[1] = 2, t.strides[0] = 16, t.strides[1] = 48;
    TAP_OK(!ic_view_is_c_contiguous(&t), "a transposed view is not C-contiguous");

    /* (2,1,6) with a stride of 4 (not 24) on the size-1 dimension: still contiguous */
    struct ic_view u = {.itemsize = 4, .ndim = 3, .shape = {2, 1, 6}, .strides = {24, 4, 4}};
    TAP_OK(ic_view_is_c_contiguous(&u), "strides of size-1 dimensions are ignored");

    struct ic_view r = view_1d(buf + 11, 4, 12, -4);
    TAP_OK(ic_view_span(&r, &lo, &hi) == 0 && lo == -44 && hi == 4,
           "reversed view of 12 spans [-44,4)");
    TAP_OK(!ic_view_is_c_contiguous(&r), "a reversed view is not contiguous");

    struct ic_view e = view_1d(NULL, 4, 0, 4);
    TAP_OK(ic_view_span(&e, &lo, &hi) == 0 && lo == 0 && hi == 0, "an empty view spans nothing");
    TAP_OK(ic_view_is_c_contiguous(&e), "an empty view is contiguous");

    struct ic_view big = view_1d(buf, 8, INT64_MAX / 4, 8);
    TAP_OK(ic_view_span(&big, &lo, &hi) == IC_ERANGE, "an overflowing span is IC_ERANGE");

    struct ic_view huge = {.itemsize = 1, .ndim = 2, .shape = {INT64_MAX / 2, 4}};
    int64_t numel;
    TAP_OK(ic_view_numel(&huge, &numel) == IC_ERANGE, "an overflowing element count is IC_ERANGE");
}

static void test_compare(void)
{
    /* base 0..11; a reversed view of it against a forward copy of the reversed values */
    int16_t base[12], reversed_copy[12];
    for (int i = 0; i < 12; i++)
        base[i] = (int16_t)(i * 37 + 5);
    for (int i = 0; i < 12; i++)
        reversed_copy[i] = base[11 - i];
    struct ic_view rev = view_1d(base + 11, 2, 12, -2);
    struct ic_view fwd = view_1d(reversed_copy, 2, 12, 2);
    struct ic_compare_result res;
    TAP_OK(ic_view_compare(&rev, &fwd, &res) == 0 && res.mismatches == 0 && res.compared == 12,
           "a negative-stride view equals the reversed copy");

    reversed_copy[7] ^= 1;
    reversed_copy[9] ^= 1;
    TAP_OK(ic_view_compare(&rev, &fwd, &res) == 0 && res.mismatches == 2 &&
               res.first_mismatch == 7,
           "two corrupted elements give 2 mismatches, the first at index 7");

    /* a broadcast (zero-stride) view (3,4) of 4 values against its materialised copy */
    float row[4] = {1.5f, -2.25f, 3.0f, 7.75f}, full[12];
    for (int i = 0; i < 12; i++)
        full[i] = row[i % 4];
    struct ic_view b = {.data = (uintptr_t)row, .itemsize = 4, .ndim = 2, .shape = {3, 4},
                        .strides = {0, 4}};
    struct ic_view f = {.data = (uintptr_t)full, .itemsize = 4, .ndim = 2, .shape = {3, 4},
                        .strides = {16, 4}};
    TAP_OK(ic_view_compare(&b, &f, &res) == 0 && res.mismatches == 0,
           "a zero-stride view equals its materialised copy");
    full[10] = 0.0f;
    TAP_OK(ic_view_compare(&b, &f, &res) == 0 && res.mismatches == 1 && res.first_mismatch == 10,
           "a changed element of the copy is found at index 10");

    /* 0-d views compare their single element */
    double x = 2.5, y = 2.5;
    struct ic_view sx = {.data = (uintptr_t)&x, .itemsize = 8, .ndim = 0};
    struct ic_view sy = {.data = (uintptr_t)&y, .itemsize = 8, .ndim = 0};
    TAP_OK(ic_view_compare(&sx, &sy, &res) == 0 && res.compared == 1 && res.mismatches == 0,
           "0-d views compare one element");
    y = -2.5;
    TAP_OK(ic_view_compare(&sx, &sy, &res) == 0 && res.mismatches == 1, "0-d mismatch found");

    /* bools compare as truth values: 0x01 and 0x02 are both true */
    unsigned char b1[3] = {1, 0, 1}, b2[3] = {2, 0, 1};
    struct ic_view vb1 = view_1d(b1, 1, 3, 1), vb2 = view_1d(b2, 1, 3, 1);
    vb1.dtype = vb2.dtype = IC_DTYPE_BOOL;
    TAP_OK(ic_view_compare(&vb1, &vb2, &res) == 0 && res.mismatches == 0,
           "bools compare as truth values");
    vb1.dtype = vb2.dtype = IC_DTYPE_UINT8;
    TAP_OK(ic_view_compare(&vb1, &vb2, &res) == 0 && res.mismatches == 1,
           "the same bytes as uint8 differ");

    /* 4-bit integers compare by their low halves: 0x0E (ml_dtypes' -2) and 0xFE (a torch int8
     * tensor viewed as int4) are the same int4 */
    unsigned char n1[3] = {0x0E, 0x07, 0x08}, n2[3] = {0xFE, 0x07, 0x18};
    struct ic_view vn1 = view_1d(n1, 1, 3, 1), vn2 = view_1d(n2, 1, 3, 1);
    vn1.dtype = vn2.dtype = IC_DTYPE_INT4;
    TAP_OK(ic_view_compare(&vn1, &vn2, &res) == 0 && res.mismatches == 0,
           "int4 elements compare by their low four bits");
    n2[1] = 0x06;
    TAP_OK(ic_view_compare(&vn1, &vn2, &res) == 0 && res.mismatches == 1 && res.first_mismatch == 1,
           "a changed low half of an int4 is a mismatch");
    vn2.dtype = IC_DTYPE_INT8;
    TAP_OK(ic_view_compare(&vn1, &vn2, &res) == 0 && res.mismatches == 3,
           "int4 against int8 compares bytes");

    struct ic_view other = view_1d(base, 2, 11, 2);
    TAP_OK(ic_view_compare(&rev, &other, &res) == IC_EINVAL, "shapes that differ are IC_EINVAL");
}

/* The fast paths of the compare: contiguous rows by memcmp, strided ones a word at a time, and
 * the C-order index of a mismatch kept through merged dimensions. */
static void test_compare_paths(void)
{
    static uint64_t a[2 * 3 * 40], b[2 * 3 * 40];
    for (int i = 0; i < 240; i++)
        a[i] = b[i] = 0x0101010101010101ULL * (uint64_t)(i % 251) + (uint64_t)i;
    /* (2,3,40) contiguous in both: one merged row of 240 elements */
    struct ic_view va = {.data = (uintptr_t)a, .itemsize = 8, .ndim = 3, .shape = {2, 3, 40}};
    struct ic_view vb = va;
    vb.data = (uintptr_t)b;
    ic_view_set_c_strides(&va);
    ic_view_set_c_strides(&vb);
    struct ic_compare_result res;
    TAP_OK(ic_view_compare(&va, &vb, &res) == 0 && res.mismatches == 0 && res.compared == 240,
           "contiguous (2,3,40) uint64 views compare equal");
    ((unsigned char *)&b[133])[5] ^= 0x40;
    b[239] ^= 1;
    TAP_OK(ic_view_compare(&va, &vb, &res) == 0 && res.mismatches == 2 &&
               res.first_mismatch == 133,
           "one changed byte of element 133 and the last element: 2 mismatches, first 133");

    /* every other element of both, as (2,3,20) with strides (960,320,16): strided rows */
    struct ic_view sa = {.data = (uintptr_t)a, .itemsize = 8, .ndim = 3, .shape = {2, 3, 20},
                         .strides = {960, 320, 16}};
    struct ic_view sb = sa;
    sb.data = (uintptr_t)b;
    TAP_OK(ic_view_compare(&sa, &sb, &res) == 0 && res.mismatches == 0,
           "the even elements agree (133 and 239 are odd)");
    b[134] ^= 1; /* element (1,0,7) of the strided view: index 60 + 7 = 67 */
    TAP_OK(ic_view_compare(&sa, &sb, &res) == 0 && res.mismatches == 1 && res.first_mismatch == 67,
           "a changed even element is found at its C-order index 67");

    /* a 3-byte raw element: compared by memcmp element by element when strided */
    unsigned char r1[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, r2[12];
    memcpy(r2, r1, sizeof(r2));
    r2[7] = 0; /* in the second element (bytes 6-8); bytes 3-5 and 9-11 are gaps */
    struct ic_view ra = view_1d(r1, 3, 2, 6), rb = view_1d(r2, 3, 2, 6);
    TAP_OK(ic_view_compare(&ra, &rb, &res) == 0 && res.mismatches == 1 && res.first_mismatch == 1,
           "3-byte elements 6 bytes apart: the second differs");

    int64_t shape[3] = {2, 1, 5}, s1[3] = {40, 4, 8}, s2[3] = {5, 99, 1};
    TAP_OK(ic_view_merge_dims(3, shape, s1, s2) == 1 && shape[0] == 10 && s1[0] == 8 &&
               s2[0] == 1,
           "(2,1,5) with strides (40,_,8) and (5,_,1) merges into one dimension of 10");
    int64_t shape2[2] = {2, 5}, t1[2] = {40, 8}, t2[2] = {6, 1};
    TAP_OK(ic_view_merge_dims(2, shape2, t1, t2) == 2,
           "strides (6,1) over extent 5 do not merge");
}

static void test_addresses(void)
{
    int32_t buf[24];
    /* (2,1,6) contiguous with two different strides on the size-1 dimension */
    struct ic_view a = {.data = (uintptr_t)buf, .itemsize = 4, .ndim = 3, .shape = {2, 1, 6},
                        .strides = {24, 24, 4}};
    struct ic_view b = a;
    b.strides[1] = 0;
    struct ic_compare_result res;
    TAP_OK(ic_view_compare_addresses(&a, &b, &res) == 0 && res.mismatches == 0,
           "strides of size-1 dimensions do not change addresses");
    b.strides[0] = 28;
    TAP_OK(ic_view_compare_addresses(&a, &b, &res) == 0 && res.mismatches == 6 &&
               res.first_mismatch == 6,
           "a different outer stride moves the second row: first differing index 6");
    char text[64];
    ic_view_format_index(&a, 7, text, sizeof(text));
    TAP_OK(strcmp(text, "[1,0,1]") == 0, "linear index 7 of (2,1,6) is [1,0,1] (got %s)", text);
    ic_view_format_shape(&a, text, sizeof(text));
    TAP_OK(strcmp(text, "(2, 1, 6)") == 0, "shape text (got %s)", text);
}

int main(void)
{
    test_span_and_contiguity();
    test_compare();
    test_compare_paths();
    test_addresses();
    return tap_done();
}
