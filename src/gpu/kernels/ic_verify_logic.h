/*
 * ic_verify_logic: the per-thread bodies of the verification kernels, written once and compiled
 * for the GPU (src/gpu/kernels/ic_verify.cu) and for the host (the CUDA stand-in under
 * tests/cuda_standin/, and tests/unit/gpu/test_kernels.c).
 *
 * Contract
 * - A kernel is a thin wrapper: it computes its thread's index and the grid's thread count and
 *   calls ic_verify_<kernel>_thread, which visits the elements thread, thread + count, ... (a
 *   grid-stride loop). Calling the body once for every thread of a grid, in any order, does
 *   what the GPU does; that is how the stand-in runs a launch and what test_kernels checks.
 * - Each kernel takes one parameter struct by value. The structs below are that ABI: one
 *   definition, fixed-width fields ordered so that no compiler inserts padding, and sizes
 *   asserted by both compilers.
 * - Addresses are carried as uint64_t. Elements are addressed through byte strides with
 *   ic_logic_offset, generated with ic_logic_pattern and compared as ic_logic_equal defines
 *   (ic_kernel_logic.h), so a GPU and a host verification agree bit for bit.
 * - Findings are counted per thread and merged with one atomic add and one atomic min per
 *   thread that found a mismatch, into a struct ic_verify_counters whose `mismatches` the
 *   caller zeroed and whose `first_mismatch` it set to all ones.
 * - Side effects: the fill's stores, the counters, and the spin's reading of a clock.
 */
#ifndef IC_VERIFY_LOGIC_H
#define IC_VERIFY_LOGIC_H

#include <stdint.h>
#include <time.h>

#include "ic_kernel_logic.h"

/* The most dimensions a kernel takes; ic_cuda.h's IC_CUDA_MAX_NDIM is asserted equal. */
#define IC_VERIFY_MAX_NDIM 8

/* Kernel names, as cuModuleGetFunction looks them up (the kernels are extern "C"). */
#define IC_VERIFY_COMPARE       "ic_verify_compare"
#define IC_VERIFY_CHECK_PATTERN "ic_verify_check_pattern"
#define IC_VERIFY_FILL_PATTERN  "ic_verify_fill_pattern"
#define IC_VERIFY_SPIN          "ic_verify_spin"

/* Threads per block of every launch but the spin's. */
#define IC_VERIFY_BLOCK 256

#ifdef __cplusplus
#define IC_VERIFY_STATIC_ASSERT static_assert
#else
#define IC_VERIFY_STATIC_ASSERT _Static_assert
#endif

/* Where a kernel's findings go. `unsigned long long` because that is the type CUDA's 64-bit
 * atomics take. */
struct ic_verify_counters {
    unsigned long long mismatches;
    unsigned long long first_mismatch; /* C-order linear index; all ones when none */
};

/* ic_verify_compare: element i of view a against element i of view b. */
struct ic_verify_compare_args {
    uint64_t a;        /* address of a's first element */
    uint64_t b;        /* address of b's first element */
    uint64_t counters; /* address of a struct ic_verify_counters */
    int64_t numel;
    int64_t shape[IC_VERIFY_MAX_NDIM];
    int64_t a_strides[IC_VERIFY_MAX_NDIM]; /* bytes */
    int64_t b_strides[IC_VERIFY_MAX_NDIM]; /* bytes */
    int32_t ndim;
    int32_t itemsize;
    int32_t compare_mode; /* IC_LOGIC_CMP_*: bytes, truth values (bools), low halves (4-bit) */
    int32_t load_width; /* 1, 2, 4 or 8, dividing the itemsize and every element address */
};

/* ic_verify_check_pattern and ic_verify_fill_pattern: element i of the view against (or set
 * to) element first + offset(i, element_strides) of the seeded pattern of a base of
 * base_count elements (struct ic_pattern_ref in ic_cuda.h). */
struct ic_verify_pattern_args {
    uint64_t data;     /* address of the view's first element */
    uint64_t counters; /* check: address of a struct ic_verify_counters; fill: unused */
    uint64_t seed;
    int64_t numel;
    int64_t base_count;
    int64_t first;
    int64_t shape[IC_VERIFY_MAX_NDIM];
    int64_t strides[IC_VERIFY_MAX_NDIM];         /* bytes, in the view */
    int64_t element_strides[IC_VERIFY_MAX_NDIM]; /* elements, in the base */
    int32_t ndim;
    int32_t value_class; /* IC_LOGIC_* */
    int32_t itemsize;    /* 1 to 16 */
    int32_t load_width;  /* as in ic_verify_compare_args */
};

/* ic_verify_spin: thread 0 returns once `nanoseconds` have passed. */
struct ic_verify_spin_args {
    uint64_t nanoseconds;
};

IC_VERIFY_STATIC_ASSERT(sizeof(struct ic_verify_counters) == 16, "counters layout");
IC_VERIFY_STATIC_ASSERT(sizeof(struct ic_verify_compare_args) == 4 * 8 + 3 * 8 * 8 + 4 * 4,
                        "compare parameter layout");
IC_VERIFY_STATIC_ASSERT(sizeof(struct ic_verify_pattern_args) == 6 * 8 + 3 * 8 * 8 + 4 * 4,
                        "pattern parameter layout");
IC_VERIFY_STATIC_ASSERT(sizeof(struct ic_verify_spin_args) == 8, "spin parameter layout");

IC_HD void ic_verify_atomic_add(unsigned long long *target, unsigned long long value)
{
#ifdef __CUDA_ARCH__
    atomicAdd(target, value);
#else
    __atomic_fetch_add(target, value, __ATOMIC_RELAXED);
#endif
}

IC_HD void ic_verify_atomic_min(unsigned long long *target, unsigned long long value)
{
#ifdef __CUDA_ARCH__
    atomicMin(target, value);
#else
    unsigned long long seen = __atomic_load_n(target, __ATOMIC_RELAXED);
    while (value < seen && !__atomic_compare_exchange_n(target, &seen, value, true,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
#endif
}

/* A monotonic clock in nanoseconds: the GPU's global timer, or the host's monotonic clock. */
IC_HD uint64_t ic_verify_clock_ns(void)
{
#ifdef __CUDA_ARCH__
    uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}

/* Byte offset of element `index`. Callers merge contiguous dimensions first, so a contiguous
 * view arrives with one dimension: it skips the 64-bit divisions of ic_logic_offset, which
 * cost a GPU more than the memory access itself. */
IC_HD int64_t ic_verify_offset(int64_t index, int ndim, const int64_t *shape,
                               const int64_t *strides)
{
    if (ndim == 1)
        return index * strides[0];
    return ic_logic_offset(index, ndim, shape, strides);
}

/* The little-endian value of the `width` bytes at `src`, which is aligned to `width`. */
IC_HD uint64_t ic_verify_word(const unsigned char *src, int width)
{
#ifdef __CUDA_ARCH__
    switch (width) {
    case 8:
        return *(const uint64_t *)src;
    case 4:
        return *(const uint32_t *)src;
    case 2:
        return *(const uint16_t *)src;
    default:
        return *src;
    }
#else
    /* memcpy, not a cast: host memory may hold any type (strict aliasing). */
    uint64_t word = 0;
    __builtin_memcpy(&word, src, (size_t)width);
    return word;
#endif
}

/* Copies `size` bytes (a multiple of `width`) of an element into `dst`, reading words of
 * `width` bytes and storing them back byte by byte, so that ic_logic_equal gets the element's
 * bytes in memory order from wide loads. */
IC_HD void ic_verify_load(unsigned char *dst, const unsigned char *src, int size, int width)
{
    for (int k = 0; k < size; k += width)
        ic_logic_store(dst + k, ic_verify_word(src + k, width), width);
}

/* Element equality as ic_logic_equal defines it: truth values for bools, low halves for 4-bit
 * integers, bytes otherwise.
 * Equal bytes are equal words, so elements are compared a word of `width` bytes at a time
 * straight from memory: wide loads keep the GPU's memory transactions full, which is what lets
 * a compare run at memory speed, and nothing is staged in local memory. */
IC_HD bool ic_verify_equal(const unsigned char *a, const unsigned char *b, int itemsize, int width,
                           int mode)
{
    if (mode != IC_LOGIC_CMP_BYTES)
        return ic_logic_equal(a, b, 1, mode);
    for (int k = 0; k < itemsize; k += width) {
        if (ic_verify_word(a + k, width) != ic_verify_word(b + k, width))
            return false;
    }
    return true;
}

/* One thread's mismatches: how many, and the index of its first. */
struct ic_verify_tally {
    unsigned long long mismatches;
    unsigned long long first;
};

IC_HD void ic_verify_tally_add(struct ic_verify_tally *tally, bool equal, int64_t index)
{
    if (equal)
        return;
    if (tally->mismatches == 0)
        tally->first = (unsigned long long)index;
    tally->mismatches++;
}

/* Adds a thread's tally to the kernel's counters: one atomic each, and none without a mismatch. */
IC_HD void ic_verify_report(uint64_t counters, const struct ic_verify_tally *tally)
{
    if (tally->mismatches == 0)
        return;
    struct ic_verify_counters *out = (struct ic_verify_counters *)(uintptr_t)counters;
    ic_verify_atomic_add(&out->mismatches, tally->mismatches);
    ic_verify_atomic_min(&out->first_mismatch, tally->first);
}

IC_HD void ic_verify_compare_loop(const struct ic_verify_compare_args *args, int64_t thread,
                                  int64_t thread_count, int itemsize, int width, int mode)
{
    const unsigned char *a = (const unsigned char *)(uintptr_t)args->a;
    const unsigned char *b = (const unsigned char *)(uintptr_t)args->b;
    struct ic_verify_tally tally = {0, ~0ULL};
    for (int64_t i = thread; i < args->numel; i += thread_count) {
        const unsigned char *ea = a + ic_verify_offset(i, args->ndim, args->shape, args->a_strides);
        const unsigned char *eb = b + ic_verify_offset(i, args->ndim, args->shape, args->b_strides);
        ic_verify_tally_add(&tally, ic_verify_equal(ea, eb, itemsize, width, mode), i);
    }
    ic_verify_report(args->counters, &tally);
}

IC_HD void ic_verify_compare_thread(const struct ic_verify_compare_args *args, int64_t thread,
                                    int64_t thread_count)
{
    /* The common cases get literal sizes and no bool test in the loop, so that the compiler
     * unrolls it with the loads of several elements in flight at once. Only 1-byte elements
     * can be bools or 4-bit integers. */
    int size = args->itemsize, width = args->load_width;
    int mode = size == 1 ? args->compare_mode : IC_LOGIC_CMP_BYTES;
    if (size == 1 && mode != IC_LOGIC_CMP_BYTES)
        ic_verify_compare_loop(args, thread, thread_count, 1, 1, mode);
    else if (size == 1)
        ic_verify_compare_loop(args, thread, thread_count, 1, 1, IC_LOGIC_CMP_BYTES);
    else if (size == 2 && width == 2)
        ic_verify_compare_loop(args, thread, thread_count, 2, 2, IC_LOGIC_CMP_BYTES);
    else if (size == 4 && width == 4)
        ic_verify_compare_loop(args, thread, thread_count, 4, 4, IC_LOGIC_CMP_BYTES);
    else if (size == 8 && width == 8)
        ic_verify_compare_loop(args, thread, thread_count, 8, 8, IC_LOGIC_CMP_BYTES);
    else if (size == 16 && width == 8)
        ic_verify_compare_loop(args, thread, thread_count, 16, 8, IC_LOGIC_CMP_BYTES);
    else
        ic_verify_compare_loop(args, thread, thread_count, size, width, IC_LOGIC_CMP_BYTES);
}

IC_HD void ic_verify_check_pattern_loop(const struct ic_verify_pattern_args *args, int64_t thread,
                                        int64_t thread_count, int itemsize, int width)
{
    const unsigned char *data = (const unsigned char *)(uintptr_t)args->data;
    int mode = ic_logic_compare_mode(args->value_class, args->value_class);
    struct ic_verify_tally tally = {0, ~0ULL};
    for (int64_t i = thread; i < args->numel; i += thread_count) {
        int64_t k =
            args->first + ic_verify_offset(i, args->ndim, args->shape, args->element_strides);
        unsigned char expected[16], actual[16];
        ic_logic_pattern(expected, args->value_class, itemsize, args->seed, k, args->base_count);
        ic_verify_load(actual, data + ic_verify_offset(i, args->ndim, args->shape, args->strides),
                       itemsize, width);
        ic_verify_tally_add(&tally, ic_logic_equal(actual, expected, itemsize, mode), i);
    }
    ic_verify_report(args->counters, &tally);
}

IC_HD void ic_verify_check_pattern_thread(const struct ic_verify_pattern_args *args, int64_t thread,
                                          int64_t thread_count)
{
    /* No literal sizes here (unlike the compare): generating the expected value costs more
     * than loading the element, and each copy of the pattern code is large. */
    ic_verify_check_pattern_loop(args, thread, thread_count, args->itemsize, args->load_width);
}

IC_HD void ic_verify_fill_pattern_thread(const struct ic_verify_pattern_args *args, int64_t thread,
                                         int64_t thread_count)
{
    unsigned char *data = (unsigned char *)(uintptr_t)args->data;
    for (int64_t i = thread; i < args->numel; i += thread_count) {
        int64_t k =
            args->first + ic_verify_offset(i, args->ndim, args->shape, args->element_strides);
        ic_logic_pattern(data + ic_verify_offset(i, args->ndim, args->shape, args->strides),
                         args->value_class, args->itemsize, args->seed, k, args->base_count);
    }
}

IC_HD void ic_verify_spin_thread(const struct ic_verify_spin_args *args, int64_t thread,
                                 int64_t thread_count)
{
    (void)thread_count;
    if (thread != 0)
        return;
    uint64_t start = ic_verify_clock_ns();
    while (ic_verify_clock_ns() - start < args->nanoseconds) {
    }
}

#endif
