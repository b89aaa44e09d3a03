/*
 * bench_clock: the clock and the median the C benchmarks of bench/ share.
 *
 * Contract: header-only, static functions, nothing allocated; not part of the library.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int bench_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of `count` (>= 1) times; sorts them in place. */
static inline double bench_median(double *times, size_t count)
{
    qsort(times, count, sizeof(double), bench_compare_doubles);
    return times[count / 2];
}

#endif
