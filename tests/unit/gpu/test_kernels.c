/* Unit tests of the verification kernels' per-thread bodies (src/gpu/kernels/ic_verify_logic.h),
 * run on the host over simulated grids: each "launch" calls the body once per thread, in
 * reverse order, so a result that depended on threads finishing in index order would show.
 * The expected results come from the host's own ic_view_compare and ic_pattern_fill. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ic_dtype.h"
#include "ic_pattern.h"
#include "ic_view.h"
#include "kernels/ic_verify_logic.h"
#include "tap.h"

/* Defines `name`, a launch of a body that counts mismatches (the compare, the pattern check):
 * over a copy of the arguments whose counters are fresh ones, which it returns. A macro because
 * the two bodies take argument structs of two types. */
#define DEFINE_COUNTED_LAUNCH(name, args_type, body)                                               \
    static struct ic_verify_counters name(const args_type *proto, int64_t threads)                 \
    {                                                                                              \
        struct ic_verify_counters counters = {0, ~0ULL};                                           \
        args_type args = *proto;                                                                   \
        args.counters = (uint64_t)(uintptr_t)&counters;                                            \
        for (int64_t t = threads - 1; t >= 0; t--)                                                 \
            body(&args, t, threads);                                                               \
        return counters;                                                                           \
    }

DEFINE_COUNTED_LAUNCH(launch_compare, struct ic_verify_compare_args, ic_verify_compare_thread)
DEFINE_COUNTED_LAUNCH(launch_check, struct ic_verify_pattern_args, ic_verify_check_pattern_thread)

static void launch_fill(const struct ic_verify_pattern_args *args, int64_t threads)
{
    for (int64_t t = threads - 1; t >= 0; t--)
        ic_verify_fill_pattern_thread(args, t, threads);
}

/* Compare arguments for two views of the same shape, as ic_cuda.c builds them (without its
 * merging of dimensions, which these tests leave to test_cuda). */
static struct ic_verify_compare_args compare_args(const struct ic_view *a, const struct ic_view *b,
                                                  int load_width)
{
    struct ic_verify_compare_args args = {
        .a = a->data,
        .b = b->data,
        .ndim = a->ndim,
        .itemsize = a->itemsize,
        .compare_mode = ic_view_compare_mode(a, b),
        .load_width = load_width,
    };
    ic_view_numel(a, &args.numel);
    for (int d = 0; d < a->ndim; d++) {
        args.shape[d] = a->shape[d];
        args.a_strides[d] = a->strides[d];
        args.b_strides[d] = b->strides[d];
    }
    return args;
}

/* True when the kernel body, on every grid size given, finds what ic_view_compare finds. */
static bool agrees_with_host(const struct ic_view *a, const struct ic_view *b, int load_width,
                             struct ic_compare_result *host)
{
    static const int64_t grids[] = {1, 3 * 4, 7 * 5, 2 * 256};
    if (ic_view_compare(a, b, host) < 0)
        return false;
    struct ic_verify_compare_args args = compare_args(a, b, load_width);
    for (size_t g = 0; g < sizeof(grids) / sizeof(grids[0]); g++) {
        struct ic_verify_counters c = launch_compare(&args, grids[g]);
        int64_t first = c.mismatches ? (int64_t)c.first_mismatch : -1;
        if ((int64_t)c.mismatches != host->mismatches || first != host->first_mismatch)
            return false;
    }
    return true;
}

static void test_compare(void)
{
    int32_t a[100], b[100];
    for (int i = 0; i < 100; i++)
        a[i] = b[i] = i * 7919 - 300;
    struct ic_view va = {
        .data = (uintptr_t)a, .itemsize = 4, .ndim = 1, .shape = {100}, .strides = {4}};
    struct ic_view vb = va;
    vb.data = (uintptr_t)b;
    struct ic_compare_result host;
    TAP_OK(agrees_with_host(&va, &vb, 4, &host) && host.mismatches == 0,
           "equal contiguous views: no mismatch on any grid");

    b[58] ^= 0x100, b[13] ^= 1, b[57] = 0;
    TAP_OK(agrees_with_host(&va, &vb, 4, &host) && host.mismatches == 3 &&
               host.first_mismatch == 13,
           "3 mismatches, the first at 13, on grids of 1 to 512 threads (more than elements)");
    TAP_OK(agrees_with_host(&va, &vb, 1, &host) && host.mismatches == 3,
           "byte loads find what word loads find");

    /* a transposed (5, 20) view of a against a C-contiguous copy of it, with one change */
    int32_t t[100];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 20; j++)
            t[i * 20 + j] = a[j * 5 + i];
    struct ic_view vt = {
        .data = (uintptr_t)a, .itemsize = 4, .ndim = 2, .shape = {5, 20}, .strides = {4, 20}};
    struct ic_view vc = {
        .data = (uintptr_t)t, .itemsize = 4, .ndim = 2, .shape = {5, 20}, .strides = {80, 4}};
    TAP_OK(agrees_with_host(&vt, &vc, 4, &host) && host.mismatches == 0,
           "a transposed view equals its C-order copy");
    t[2 * 20 + 7] = -1; /* linear index 47 */
    TAP_OK(agrees_with_host(&vt, &vc, 4, &host) && host.mismatches == 1 &&
               host.first_mismatch == 47,
           "a change at [2,7] of the copy is found at linear index 47");

    /* a reversed view, and a broadcast (zero-stride) one */
    int16_t fwd[12], rev[12];
    for (int i = 0; i < 12; i++)
        fwd[i] = (int16_t)(i * 37 + 5), rev[11 - i] = fwd[i];
    struct ic_view vr = {
        .data = (uintptr_t)(rev + 11), .itemsize = 2, .ndim = 1, .shape = {12}, .strides = {-2}};
    struct ic_view vf = {
        .data = (uintptr_t)fwd, .itemsize = 2, .ndim = 1, .shape = {12}, .strides = {2}};
    TAP_OK(agrees_with_host(&vr, &vf, 2, &host) && host.mismatches == 0,
           "a negative-stride view equals the forward copy");
    rev[11 - 4] ^= 8;
    TAP_OK(agrees_with_host(&vr, &vf, 2, &host) && host.mismatches == 1 && host.first_mismatch == 4,
           "a change under the reversed view is found at index 4");
    float row[4] = {1.5f, -2.0f, 3.25f, 8.0f}, full[12];
    for (int i = 0; i < 12; i++)
        full[i] = row[i % 4];
    full[9] = 0.5f;
    struct ic_view vbcast = {
        .data = (uintptr_t)row, .itemsize = 4, .ndim = 2, .shape = {3, 4}, .strides = {0, 4}};
    struct ic_view vfull = {
        .data = (uintptr_t)full, .itemsize = 4, .ndim = 2, .shape = {3, 4}, .strides = {16, 4}};
    TAP_OK(agrees_with_host(&vbcast, &vfull, 4, &host) && host.mismatches == 1 &&
               host.first_mismatch == 9,
           "a zero-stride view against its materialised copy: index 9 differs");

    /* elements wider than 16 bytes are compared in chunks: a difference in byte 20 counts */
    unsigned char wide_a[4 * 24], wide_b[4 * 24];
    for (int i = 0; i < (int)sizeof(wide_a); i++)
        wide_a[i] = wide_b[i] = (unsigned char)(i * 13);
    wide_b[2 * 24 + 20] ^= 0x40;
    struct ic_view vwa = {
        .data = (uintptr_t)wide_a, .itemsize = 24, .ndim = 1, .shape = {4}, .strides = {24}};
    struct ic_view vwb = vwa;
    vwb.data = (uintptr_t)wide_b;
    TAP_OK(agrees_with_host(&vwa, &vwb, 8, &host) && host.mismatches == 1 &&
               host.first_mismatch == 2,
           "24-byte elements: a change in byte 20 of element 2 is found");

    /* bools compare as truth values; the same bytes as uint8 do not */
    unsigned char b1[3] = {1, 0, 2}, b2[3] = {2, 0, 1};
    struct ic_view vb1 = {.data = (uintptr_t)b1,
                          .itemsize = 1,
                          .ndim = 1,
                          .shape = {3},
                          .strides = {1},
                          .dtype = IC_DTYPE_BOOL};
    struct ic_view vb2 = vb1;
    vb2.data = (uintptr_t)b2;
    TAP_OK(agrees_with_host(&vb1, &vb2, 1, &host) && host.mismatches == 0,
           "bools 1 and 2 are both true");
    vb1.dtype = vb2.dtype = IC_DTYPE_UINT8;
    TAP_OK(agrees_with_host(&vb1, &vb2, 1, &host) && host.mismatches == 2,
           "as uint8 the same bytes differ twice");
}

static void test_word_loads(void)
{
    const unsigned char bytes[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    TAP_OK(ic_verify_word(bytes, 4) == 0x04030201u, "a 4-byte word is read little-endian");
    unsigned char copy[8] = {0};
    ic_verify_load(copy, bytes, 8, 2);
    TAP_OK(memcmp(copy, bytes, 8) == 0, "loading in 2-byte words gives back the bytes in order");
}

static struct ic_verify_pattern_args pattern_args(void *data, enum ic_dtype dtype, uint64_t seed,
                                                  int64_t base_count)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    struct ic_verify_pattern_args args = {
        .data = (uint64_t)(uintptr_t)data,
        .seed = seed,
        .numel = base_count,
        .base_count = base_count,
        .ndim = 1,
        .value_class = (int32_t)info->value_class,
        .itemsize = info->itemsize,
        .load_width = 1,
    };
    args.shape[0] = base_count;
    args.strides[0] = info->itemsize;
    args.element_strides[0] = 1;
    return args;
}

static void test_pattern(void)
{
    /* a base of 60 float32 and a (3, 4) view of it: base element 5 + 10 i + 2 j */
    float base[60];
    ic_pattern_fill(base, 60, IC_DTYPE_FLOAT32, 1234);
    struct ic_verify_pattern_args args = pattern_args(base + 5, IC_DTYPE_FLOAT32, 1234, 60);
    args.numel = 12, args.first = 5, args.ndim = 2, args.load_width = 4;
    args.shape[0] = 3, args.shape[1] = 4;
    args.strides[0] = 40, args.strides[1] = 8;
    args.element_strides[0] = 10, args.element_strides[1] = 2;
    struct ic_verify_counters c = launch_check(&args, 5);
    TAP_OK(c.mismatches == 0, "a layout view of the host pattern checks clean (%llu mismatches)",
           c.mismatches);
    base[6] = 0.0f; /* not under the view */
    c = launch_check(&args, 5);
    TAP_OK(c.mismatches == 0, "a change outside the view is not seen");
    base[5 + 10 + 4] = 0.0f; /* [1,2]: linear index 6 */
    c = launch_check(&args, 5);
    TAP_OK(c.mismatches == 1 && c.first_mismatch == 6, "a change at [1,2] is found at index 6");

    /* every dtype: the kernel's expected values are the host's */
    for (enum ic_dtype dtype = IC_DTYPE_FIRST; dtype < IC_DTYPE_END; dtype++) {
        unsigned char buf[64 * 16];
        ic_pattern_fill(buf, 64, dtype, 99);
        struct ic_verify_pattern_args all = pattern_args(buf, dtype, 99, 64);
        struct ic_verify_counters same = launch_check(&all, 9);
        all.seed = 100;
        struct ic_verify_counters other = launch_check(&all, 9);
        TAP_OK(same.mismatches == 0 && other.mismatches > 0,
               "%s: the host pattern checks clean, another seed's does not (%llu mismatches)",
               ic_dtype_name(dtype), other.mismatches);
    }

    /* fill through a reversed view: view element i is base element 39 - i */
    int64_t filled[40], expected[40];
    memset(filled, 0, sizeof(filled));
    ic_pattern_fill(expected, 40, IC_DTYPE_INT64, 7);
    struct ic_verify_pattern_args fill = pattern_args(filled + 39, IC_DTYPE_INT64, 7, 40);
    fill.first = 39, fill.strides[0] = -8, fill.element_strides[0] = -1;
    launch_fill(&fill, 6);
    TAP_OK(memcmp(filled, expected, sizeof(filled)) == 0,
           "a fill through a reversed view writes the host's pattern");
    struct ic_verify_counters after = launch_check(&fill, 6);
    TAP_OK(after.mismatches == 0, "and the check agrees with the fill");
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void test_spin(void)
{
    struct ic_verify_spin_args args = {.nanoseconds = 3000000};
    uint64_t start = now_ns();
    ic_verify_spin_thread(&args, 1, 2);
    uint64_t other = now_ns() - start;
    start = now_ns();
    ic_verify_spin_thread(&args, 0, 2);
    uint64_t spun = now_ns() - start;
    TAP_OK(spun >= 3000000 && other < 1000000,
           "thread 0 spins 3 ms (took %llu ns), the others return at once (%llu ns)",
           (unsigned long long)spun, (unsigned long long)other);
}

int main(void)
{
    test_compare();
    test_word_loads();
    test_pattern();
    test_spin();
    return tap_done();
}
