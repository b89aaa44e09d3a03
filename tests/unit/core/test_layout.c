/* Unit tests of the layout recipes (ic_layout) and the seeded pattern (ic_pattern): the
 * expected view of every layout is worked out by hand below, and the pattern is deterministic,
 * valid for its dtype and not a palindrome. */
#include <math.h>
#include <string.h>

#include "ic_dtype.h"
#include "ic_error.h"
#include "ic_layout.h"
#include "ic_pattern.h"
#include "tap.h"

/* The expected shape, byte strides and first-element offset (bytes) of each layout, for 4-byte
 * elements. */
static const struct {
    enum ic_layout layout;
    int ndim;
    int64_t shape[32];
    int64_t strides[32];
    int64_t offset;
} expected[] = {
    {IC_LAYOUT_CONTIGUOUS, 3, {2, 3, 4}, {48, 16, 4}, 0},
    {IC_LAYOUT_FLAT, 1, {24}, {4}, 0},
    {IC_LAYOUT_FORTRAN, 3, {2, 3, 4}, {4, 8, 24}, 0},
    {IC_LAYOUT_TRANSPOSED, 3, {3, 2, 4}, {16, 48, 4}, 0},
    {IC_LAYOUT_STRIDED, 1, {10}, {12}, 4},
    {IC_LAYOUT_REVERSED, 1, {12}, {-4}, 44},
    {IC_LAYOUT_OFFSET, 1, {8}, {4}, 20},
    {IC_LAYOUT_SCALAR, 0, {0}, {0}, 0},
    {IC_LAYOUT_EMPTY, 1, {0}, {4}, 0},
    {IC_LAYOUT_UNIT_DIMS, 3, {2, 1, 6}, {24, 4, 4}, 0},
    {IC_LAYOUT_BROADCAST, 2, {3, 4}, {0, 4}, 0},
    {IC_LAYOUT_UNIT_DIMS_ODD, 3, {2, 1, 6}, {24, 3, 4}, 0},
    {IC_LAYOUT_BROADCAST_INNER, 2, {3, 4}, {4, 0}, 0},
    /* (2, 3, 4) and 29 dimensions of size 1: C strides, the unit dimensions at the itemsize */
    {IC_LAYOUT_NDIM32, 32,
     {2, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     {48, 16, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
      4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
     0},
    {IC_LAYOUT_NEG_VIEW, 3, {2, 3, 4}, {48, 16, 4}, 0},
    {IC_LAYOUT_CONJ_VIEW, 3, {2, 3, 4}, {48, 16, 4}, 0},
    {IC_LAYOUT_REQUIRES_GRAD, 3, {2, 3, 4}, {48, 16, 4}, 0},
    {IC_LAYOUT_SUBCLASS, 3, {2, 3, 4}, {48, 16, 4}, 0},
    {IC_LAYOUT_OTHER_DEVICE, 3, {2, 3, 4}, {48, 16, 4}, 0},
};

static void test_layouts(void)
{
    TAP_OK(sizeof(expected) / sizeof(expected[0]) == IC_LAYOUT_COUNT,
           "every layout has a hand-checked expectation");
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        const struct ic_layout_info *info = ic_layout_info(expected[i].layout);
        struct ic_view base = {.data = 0x10000, .itemsize = 4, .dtype = IC_DTYPE_FLOAT32};
        struct ic_view view;
        bool good = ic_layout_apply(info, &base, &view) == 0 && view.ndim == expected[i].ndim &&
                    view.data == 0x10000 + (uintptr_t)expected[i].offset;
        for (int d = 0; good && d < view.ndim; d++)
            good = view.shape[d] == expected[i].shape[d] &&
                   view.strides[d] == expected[i].strides[d];
        TAP_OK(good, "layout %s: shape, strides and offset", info->name);
        enum ic_layout back;
        TAP_OK(ic_layout_from_name(info->name, &back) == 0 && back == expected[i].layout,
               "layout %s: name round-trips", info->name);
    }
    enum ic_layout none;
    TAP_OK(ic_layout_from_name("diagonal", &none) == IC_ENOTFOUND, "unknown layout names fail");
}

static void test_slices(void)
{
    /* Python: len(range(10)[s]) and its first index, for a few slices */
    const struct {
        int64_t slice[3], start, step, count;
    } cases[] = {
        {{IC_SLICE_NONE, IC_SLICE_NONE, -1}, 9, -1, 10},
        {{1, IC_SLICE_NONE, 3}, 1, 3, 3},
        {{-3, IC_SLICE_NONE, IC_SLICE_NONE}, 7, 1, 3},
        {{5, 2, 1}, 5, 1, 0},
        {{100, IC_SLICE_NONE, -2}, 9, -2, 5},
        {{-100, 4, 1}, 0, 1, 4},
        {{IC_SLICE_NONE, -100, -1}, 9, -1, 10},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t start, step, count;
        ic_slice_adjust(10, cases[i].slice, &start, &step, &count);
        TAP_OK(count == cases[i].count && (count == 0 || start == cases[i].start) &&
                   step == cases[i].step,
               "slice %zu of range(10): start %lld step %lld count %lld", i, (long long)start,
               (long long)step, (long long)count);
    }
}

static void test_pattern(void)
{
    unsigned char a[64 * 16], b[64 * 16];
    uint64_t seed = ic_pattern_seed(1, "dlpack.numpy.torch.cpu.float32.contiguous");
    TAP_OK(seed == ic_pattern_seed(1, "dlpack.numpy.torch.cpu.float32.contiguous") &&
               seed != ic_pattern_seed(2, "dlpack.numpy.torch.cpu.float32.contiguous") &&
               seed != ic_pattern_seed(1, "dlpack.numpy.torch.cpu.float32.flat"),
           "the seed depends on the run seed and the case id, and on nothing else");

    for (int d = IC_DTYPE_FIRST; d < IC_DTYPE_END; d++) {
        const struct ic_dtype_info *info = ic_dtype_info(d);
        int size = info->itemsize;
        ic_pattern_fill(a, 64, d, seed);
        ic_pattern_fill(b, 64, d, seed);
        bool same = memcmp(a, b, (size_t)(64 * size)) == 0;
        bool not_palindrome = memcmp(a, a + 63 * size, (size_t)size) != 0;
        bool valid = true, neighbours_differ = true;
        for (int i = 0; i < 64; i++) {
            const unsigned char *e = a + i * size;
            if (info->value_class == IC_VALUE_BOOL)
                valid = valid && e[0] <= 1;
            if (info->value_class == IC_VALUE_FLOAT && size == 4) {
                float f;
                memcpy(&f, e, 4);
                valid = valid && isnormal(f);
            }
            if ((info->value_class == IC_VALUE_FLOAT && size == 8) ||
                (info->value_class == IC_VALUE_COMPLEX && size == 16)) {
                double x;
                memcpy(&x, e, 8);
                valid = valid && isnormal(x);
            }
            if (info->value_class == IC_VALUE_FLOAT && size == 2) {
                uint16_t h;
                memcpy(&h, e, 2);
                unsigned exponent = (h >> 10) & 0x1f;
                valid = valid && exponent != 0 && exponent != 0x1f;
            }
            if (info->value_class == IC_VALUE_FLOAT8_E4M3FN)
                valid = valid && ((e[0] >> 3) & 0xf) != 0 && ((e[0] >> 3) & 0xf) != 0xf;
            if (info->value_class == IC_VALUE_FLOAT8_E5M2)
                valid = valid && ((e[0] >> 2) & 0x1f) != 0 && ((e[0] >> 2) & 0x1f) != 0x1f;
            if (info->value_class == IC_VALUE_NIBBLE)
                valid = valid && e[0] <= 0xF; /* the low half of a zero byte */
            if (info->value_class == IC_VALUE_BFLOAT) {
                uint16_t h;
                memcpy(&h, e, 2);
                unsigned exponent = (h >> 7) & 0xff;
                valid = valid && exponent != 0 && exponent != 0xff;
            }
            if (i > 0 && info->value_class != IC_VALUE_BOOL)
                neighbours_differ = neighbours_differ && memcmp(e, e - size, (size_t)size) != 0;
            if (info->value_class == IC_VALUE_BOOL && (i == 0 || i == 63))
                valid = valid && e[0] == (i == 0);
        }
        TAP_OK(same && not_palindrome && valid && neighbours_differ,
               "pattern of %s: repeatable, valid values, not a palindrome, neighbours differ",
               info->name);
    }
    unsigned char two[2];
    ic_pattern_fill(two, 2, IC_DTYPE_BOOL, 0);
    TAP_OK(two[0] != two[1], "even two bools differ end to end");
}

int main(void)
{
    test_layouts();
    test_slices();
    test_pattern();
    return tap_done();
}
