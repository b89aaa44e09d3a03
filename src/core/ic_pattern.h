/*
 * ic_pattern: the seeded byte patterns arrays are built from.
 *
 * Contract
 * - ic_pattern_fill writes `count` elements of `dtype` into `buf`, a pure function of
 *   (seed, dtype, count): the same arguments always give the same bytes, on any machine. The
 *   values come from ic_kernel_logic.h, which the GPU kernels share, so a device can check a
 *   view against the pattern without the pattern being uploaded.
 * - Every value is valid for its dtype (bools are 0 or 1; floats are finite, normal and of
 *   moderate exponent; complex parts likewise), so a library that converts, canonicalises or
 *   flushes values cannot turn a correct exchange into a false mismatch.
 * - The pattern is not a palindrome, and neighbouring elements of 1- and 2-byte integers
 *   always differ (wider values are random, bools random bits), so a reversed, transposed or
 *   off-by-one view shows as a mismatch.
 * - ic_pattern_seed derives a case's seed from the run seed and the case id, so every case
 *   gets its own pattern and a rerun of one case reproduces it.
 */
#ifndef IC_PATTERN_H
#define IC_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

#include "ic_dtype.h"

void ic_pattern_fill(void *buf, int64_t count, enum ic_dtype dtype, uint64_t seed);

uint64_t ic_pattern_seed(uint64_t run_seed, const char *case_id);

/* The nulls of the Arrow `nulls` variant: the base element at `base_index` is null when this
 * is true (every third one, from index 1), whatever the dtype and layout; the probes are told
 * which through build(valid=...), so the rule lives here alone. */
static inline bool ic_pattern_is_null(int64_t base_index)
{
    return base_index % 3 == 1;
}

#endif
