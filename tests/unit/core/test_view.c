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

    struct ic_view other = view_1d(base, 2, 11, 2);
    TAP_OK(ic_view_compare(&rev, &other, &res) == IC_EINVAL, "shapes that differ are IC_EINVAL");
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
    test_addresses();
    return tap_done();
}
