/* The views' reading half: comparing their elements and checking them readable, both through
 * the guard (ic_guard.h), which itself needs only the views' geometry (ic_view.c). */
#include "ic_view.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_kernel_logic.h"

int ic_view_compare_mode(const struct ic_view *a, const struct ic_view *b)
{
    const struct ic_dtype_info *ia = ic_dtype_info(a->dtype), *ib = ic_dtype_info(b->dtype);
    if (!ia || !ib)
        return IC_LOGIC_CMP_BYTES; /* raw bytes on either side */
    return ic_logic_compare_mode((int)ia->value_class, (int)ib->value_class);
}

int ic_view_merge_dims(int ndim, int64_t *shape, int64_t *first, int64_t *second)
{
    int kept = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        int64_t first_span, second_span;
        if (kept > 0 && !__builtin_mul_overflow(first[d], shape[d], &first_span) &&
            !__builtin_mul_overflow(second[d], shape[d], &second_span) &&
            first[kept - 1] == first_span && second[kept - 1] == second_span) {
            shape[kept - 1] *= shape[d];
            first[kept - 1] = first[d];
            second[kept - 1] = second[d];
            continue;
        }
        shape[kept] = shape[d];
        first[kept] = first[d];
        second[kept] = second[d];
        kept++;
    }
    return kept;
}

/* One row of a compare: the mismatches among `count` elements read `stride_a` and `stride_b`
 * bytes apart, the row index of the first in *first. */
struct ic_compare_row {
    const unsigned char *a, *b;
    int64_t stride_a, stride_b, count;
    int itemsize, mode;
};

/* Elements of a fixed-size unsigned type T compared as words: memcpy is the portable unaligned
 * load, which the compiler turns into one instruction. The element 64 ahead is prefetched: a
 * strided or reversed walk left to the hardware's prefetcher read 34-41 % of memcmp's bandwidth
 * (stride 16 bytes) and 53-63 % (reversed), 45-46 % and 65-68 % with it. A prefetch is a hint
 * that never faults, past a view's end included; the elements read are the guard's (ic_guard). */
#define IC_COMPARE_WORDS(T, row, first, mismatches)                                                \
    for (int64_t i_ = 0; i_ < (row)->count; i_++) {                                                \
        __builtin_prefetch((row)->a + (i_ + 64) * (row)->stride_a);                                \
        __builtin_prefetch((row)->b + (i_ + 64) * (row)->stride_b);                                \
        T x_, y_;                                                                                  \
        memcpy(&x_, (row)->a + i_ * (row)->stride_a, sizeof(T));                                   \
        memcpy(&y_, (row)->b + i_ * (row)->stride_b, sizeof(T));                                   \
        if (x_ != y_) {                                                                            \
            if ((mismatches)++ == 0)                                                               \
                *(first) = i_;                                                                     \
        }                                                                                          \
    }

static int64_t ic_compare_elements(const struct ic_compare_row *row, int64_t *first)
{
    int64_t mismatches = 0;
    if (row->mode != IC_LOGIC_CMP_BYTES || (row->itemsize != 1 && row->itemsize != 2 &&
                                            row->itemsize != 4 && row->itemsize != 8)) {
        for (int64_t i = 0; i < row->count; i++) {
            const unsigned char *x = row->a + i * row->stride_a, *y = row->b + i * row->stride_b;
            bool equal = row->mode == IC_LOGIC_CMP_BYTES
                             ? memcmp(x, y, (size_t)row->itemsize) == 0
                             : ic_logic_equal(x, y, row->itemsize, row->mode);
            if (!equal && mismatches++ == 0)
                *first = i;
        }
        return mismatches;
    }
    switch (row->itemsize) {
    case 1:
        IC_COMPARE_WORDS(uint8_t, row, first, mismatches);
        break;
    case 2:
        IC_COMPARE_WORDS(uint16_t, row, first, mismatches);
        break;
    case 4:
        IC_COMPARE_WORDS(uint32_t, row, first, mismatches);
        break;
    default:
        IC_COMPARE_WORDS(uint64_t, row, first, mismatches);
        break;
    }
    return mismatches;
}

static int64_t ic_compare_row(const struct ic_compare_row *row, int64_t *first)
{
    /* A run contiguous in both views compares equal bytes as memcmp does, at its speed; only
     * a run with a difference is walked element by element to count and place it. */
    if (row->mode == IC_LOGIC_CMP_BYTES && row->stride_a == row->itemsize &&
        row->stride_b == row->itemsize &&
        memcmp(row->a, row->b, (size_t)(row->count * row->itemsize)) == 0)
        return 0;
    return ic_compare_elements(row, first);
}

/* ic_view_compare, with the guard for views[first] onwards only. */
static int ic_view_compare_from(const struct ic_view *a, const struct ic_view *b, int first,
                                struct ic_compare_result *ret)
{
    if (!ic_view_same_shape(a, b) || a->itemsize != b->itemsize || a->itemsize <= 0)
        return IC_EINVAL;
    /* The views' elements are checked once, before any is read: one system call per batch
     * of pages instead of one per element, and a library's bad pointer is a verdict. */
    const struct ic_view *views[2] = {a, b};
    for (int i = first; i < 2; i++) {
        int64_t bad_index = 0;
        uintptr_t bad_address = 0;
        int rc = ic_guard_view(views[i], &bad_index, &bad_address);
        if (rc == IC_EFAULT) {
            ret->unreadable = i + 1;
            ret->unreadable_index = bad_index;
            ret->unreadable_address = bad_address;
        }
        if (rc < 0)
            return rc;
    }
    return ic_view_compare_elements(a, b, ret);
}

int ic_view_compare(const struct ic_view *a, const struct ic_view *b, struct ic_compare_result *ret)
{
    return ic_view_compare_from(a, b, 0, ret);
}

int ic_view_compare_own(const struct ic_view *own, const struct ic_view *theirs,
                        struct ic_compare_result *ret)
{
    return ic_view_compare_from(own, theirs, 1, ret);
}

int ic_view_compare_elements(const struct ic_view *a, const struct ic_view *b,
                             struct ic_compare_result *ret)
{
    if (!ic_view_same_shape(a, b) || a->itemsize != b->itemsize || a->itemsize <= 0)
        return IC_EINVAL;
    int64_t numel;
    int rc = ic_view_numel(a, &numel);
    if (rc < 0)
        return rc;
    struct ic_compare_result result = {.compared = numel, .mismatches = 0, .first_mismatch = -1};
    if (numel == 0) {
        *ret = result;
        return 0;
    }
    /* Rows of the innermost merged dimension, walked with an odometer over the outer ones:
     * merging keeps every element's C-order index, so a mismatch's index is the view's. */
    int64_t shape[IC_MAX_NDIM], sa[IC_MAX_NDIM], sb[IC_MAX_NDIM];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    memcpy(sa, a->strides, sizeof(int64_t) * (size_t)a->ndim);
    memcpy(sb, b->strides, sizeof(int64_t) * (size_t)a->ndim);
    int ndim = ic_view_merge_dims(a->ndim, shape, sa, sb);
    if (ndim == 0) {
        ndim = 1;
        shape[0] = 1;
        sa[0] = sb[0] = a->itemsize;
    }
    int inner = ndim - 1;
    struct ic_compare_row row = {
        .a = (const unsigned char *)a->data,
        .b = (const unsigned char *)b->data,
        .stride_a = sa[inner],
        .stride_b = sb[inner],
        .count = shape[inner],
        .itemsize = a->itemsize,
        .mode = ic_view_compare_mode(a, b),
    };
    int64_t index[IC_MAX_NDIM] = {0};
    for (int64_t start = 0; start < numel; start += row.count) {
        int64_t first = 0, mismatches = ic_compare_row(&row, &first);
        if (mismatches > 0 && result.mismatches == 0)
            result.first_mismatch = start + first;
        result.mismatches += mismatches;
        for (int d = inner - 1; d >= 0; d--) {
            if (++index[d] < shape[d]) {
                row.a += sa[d];
                row.b += sb[d];
                break;
            }
            row.a -= sa[d] * (shape[d] - 1);
            row.b -= sb[d] * (shape[d] - 1);
            index[d] = 0;
        }
    }
    *ret = result;
    return 0;
}

int ic_view_check_readable(const struct ic_view *view, char *why, size_t size)
{
    int64_t bad_index = 0;
    uintptr_t bad_address = 0;
    char index[96];
    int rc = ic_guard_view(view, &bad_index, &bad_address);
    if (rc == IC_EFAULT) {
        ic_view_format_index(view, bad_index, index, sizeof(index));
        snprintf(why, size,
                 "element %s of the array at 0x%llx cannot be read: the memory at 0x%llx is "
                 "not mapped readable",
                 index, (unsigned long long)view->data, (unsigned long long)bad_address);
    } else if (rc < 0) {
        snprintf(why, size, "the elements at 0x%llx cannot be checked: %s",
                 (unsigned long long)view->data, ic_strerror(rc));
    }
    return rc;
}
