/*
 * bench_host_compare: how fast ic_view_compare reads host memory, against memcmp on the same
 * buffers in the same run.
 *
 * Two host buffers hold the same bytes (a second copy, so that the compare reads two streams,
 * as it does between a producer's array and a consumer's). Timed, median of --runs runs after a
 * warm-up:
 *   memcmp        memcmp of the first --mib MiB of both buffers: the reference bandwidth;
 *   contiguous    ic_view_compare_elements of those MiB as float32 views;
 *   strided       every other float64 of buffers twice as long (stride 16 bytes): the same
 *                 --mib MiB of elements, read as whole 8-byte words;
 *   reversed      the contiguous float32 views, both walked backwards (stride -4);
 *   int4          the contiguous bytes compared by their low four bits (the 4-bit integers);
 *   +guard        ic_view_compare, as a case calls it: the same compare after the guard
 *                 (ic_guard.h) found every page of both views readable, one byte a page
 *                 through process_vm_readv, which is the price of never faulting on a
 *                 library's bad pointer.
 * Each line gives the elements' bytes compared per second and its ratio to memcmp. The targets
 * of issue 12: contiguous >= 70% of memcmp, strided >= 40%. Then one JSON line.
 *
 * Usage: bench_host_compare [--mib N] [--runs N]    (defaults: 64 MiB, 9 runs)
 * Not part of the test suite (bench/meson.build: `meson compile -C build bench-compare`).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "ic_view.h"

/* What one timed run compares: the two views, or memcmp of `bytes` when a is NULL. */
struct bench_case {
    const char *name;
    const struct ic_view *a, *b;
    const void *raw_a, *raw_b;
    size_t bytes;
    bool guarded; /* ic_view_compare, else ic_view_compare_elements */
};

static volatile int64_t sink; /* keeps the compiler from dropping a compare */

static int run_once(const struct bench_case *c)
{
    if (!c->a) {
        sink += memcmp(c->raw_a, c->raw_b, c->bytes);
        return 0;
    }
    struct ic_compare_result res;
    int rc = c->guarded ? ic_view_compare(c->a, c->b, &res)
                        : ic_view_compare_elements(c->a, c->b, &res);
    if (rc < 0 || res.mismatches != 0) {
        fprintf(stderr, "bench_host_compare: %s: rc %d, %lld mismatches\n", c->name, rc,
                (long long)res.mismatches);
        return -1;
    }
    sink += res.compared;
    return 0;
}

static int time_case(const struct bench_case *c, int runs, double *ret_median)
{
    double *times = calloc((size_t)runs, sizeof(double));
    if (!times)
        return -1;
    int rc = run_once(c); /* warm-up: page faults and caches */
    for (int i = 0; i < runs && rc == 0; i++) {
        double start = bench_now_s();
        rc = run_once(c);
        times[i] = bench_now_s() - start;
    }
    if (rc == 0) {
        *ret_median = bench_median(times, (size_t)runs);
    }
    free(times);
    return rc;
}

static struct ic_view view_1d(const void *data, enum ic_dtype dtype, int itemsize,
                              int64_t count, int64_t stride)
{
    struct ic_view v = {.data = (uintptr_t)data, .device_type = IC_DEVICE_CPU, .dtype = dtype,
                        .itemsize = itemsize, .ndim = 1, .shape = {count}, .strides = {stride}};
    return v;
}

int main(int argc, char **argv)
{
    long mib = 64, runs = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mib") == 0)
            mib = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0)
            runs = strtol(argv[i + 1], NULL, 10);
    }
    if (mib <= 0 || runs <= 0) {
        fprintf(stderr, "usage: bench_host_compare [--mib N] [--runs N]\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20;
    unsigned char *a = malloc(2 * bytes), *b = malloc(2 * bytes);
    if (!a || !b) {
        fprintf(stderr, "bench_host_compare: cannot allocate 2 x %zu bytes\n", 2 * bytes);
        return 1;
    }
    for (size_t i = 0; i < 2 * bytes; i++)
        a[i] = (unsigned char)(i * 2654435761u >> 13) & 0x0F; /* low halves: also valid int4 */
    memcpy(b, a, 2 * bytes);

    int64_t n32 = (int64_t)(bytes / 4), n64 = (int64_t)(bytes / 8);
    struct ic_view ca = view_1d(a, IC_DTYPE_FLOAT32, 4, n32, 4);
    struct ic_view cb = view_1d(b, IC_DTYPE_FLOAT32, 4, n32, 4);
    struct ic_view sa = view_1d(a, IC_DTYPE_FLOAT64, 8, n64, 16);
    struct ic_view sb = view_1d(b, IC_DTYPE_FLOAT64, 8, n64, 16);
    struct ic_view ra = view_1d(a + bytes - 4, IC_DTYPE_FLOAT32, 4, n32, -4);
    struct ic_view rb = view_1d(b + bytes - 4, IC_DTYPE_FLOAT32, 4, n32, -4);
    struct ic_view na = view_1d(a, IC_DTYPE_INT4, 1, (int64_t)bytes, 1);
    struct ic_view nb = view_1d(b, IC_DTYPE_INT4, 1, (int64_t)bytes, 1);
    struct bench_case cases[] = {
        {"memcmp", NULL, NULL, a, b, bytes, false},
        {"contiguous", &ca, &cb, NULL, NULL, bytes, false},
        {"strided", &sa, &sb, NULL, NULL, bytes, false},
        {"reversed", &ra, &rb, NULL, NULL, bytes, false},
        {"int4", &na, &nb, NULL, NULL, bytes, false},
        {"contiguous+guard", &ca, &cb, NULL, NULL, bytes, true},
        {"strided+guard", &sa, &sb, NULL, NULL, bytes, true},
    };
    enum { CASES = sizeof(cases) / sizeof(cases[0]) };
    double seconds[CASES];
    for (int i = 0; i < CASES; i++) {
        if (time_case(&cases[i], (int)runs, &seconds[i]) < 0)
            return 1;
    }
    printf("host compare of %ld MiB of elements, median of %ld runs\n", mib, runs);
    for (int i = 0; i < CASES; i++)
        printf("  %-16s %8.3f ms  %7.2f GB/s  %5.1f%% of memcmp\n", cases[i].name,
               seconds[i] * 1e3, (double)bytes / seconds[i] / 1e9,
               100.0 * seconds[0] / seconds[i]);
    printf("{\"mib\": %ld, \"memcmp_s\": %.6f", mib, seconds[0]);
    for (int i = 1; i < CASES; i++)
        printf(", \"%s_s\": %.6f, \"%s_ratio\": %.3f", cases[i].name, seconds[i],
               cases[i].name, seconds[0] / seconds[i]);
    printf("}\n");
    free(a);
    free(b);
    return 0;
}
