/* The check of an array's elements against the seeded pattern, shared by the exchange (the
 * producer's own array) and the judge (the export and the import). */
#include "ic_exchange_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_gpu.h"
#include "ic_guard.h"
#include "ic_pattern.h"

/* True when the host may read the view's memory directly (the CPU, pinned host memory, or
 * a host copy of a probe that could give only the contents). */
static bool ic_host_readable(const struct ic_view *view)
{
    return view->host_copy || view->device_type == IC_DEVICE_CPU ||
           view->device_type == IC_DEVICE_CUDA_HOST;
}

/* The GPU's description of the expected view's elements: the pattern of `seed` over the
 * layout's base, addressed like the expected view. IC_EUNSUPPORTED for a view of more than
 * IC_MAX_NDIM dimensions (the GPU merges the rest down to what its kernels take). */
int ic_expected_pattern(const struct ic_case_state *st, uint64_t seed, struct ic_pattern_ref *ref)
{
    const struct ic_dtype_info *info = ic_dtype_info(st->c->dtype);
    const struct ic_view *x = &st->expected;
    if (x->ndim < 0 || x->ndim > IC_MAX_NDIM)
        return IC_EUNSUPPORTED;
    *ref = (struct ic_pattern_ref){
        .seed = seed,
        .value_class = (int)info->value_class,
        .itemsize = info->itemsize,
        .base_count = ic_layout_info(st->c->layout)->base_len,
        .ndim = x->ndim,
        .first = (int64_t)(x->data - (uintptr_t)st->base) / info->itemsize,
    };
    for (int d = 0; d < x->ndim; d++) {
        ref->shape[d] = x->shape[d];
        ref->element_strides[d] = x->strides[d] / info->itemsize;
    }
    return 0;
}

/* Checks `got` (shaped like the expected view) against the pattern: on the host through
 * both views' strides, or for device memory with the GPU's pattern kernel on `stream`.
 * 1: equal; 0: they differ (note says where); IC_EFAULT: `got` points at memory that cannot
 * be read (note says which element); other negatives: the check itself could not run (note
 * says why). */
static int ic_pattern_compare_view(const struct ic_case_state *st, const struct ic_view *got,
                                   uintptr_t stream, const char *who, char *note, size_t size)
{
    struct ic_compare_result cmp;
    char err[400];
    if (got->device_type == IC_DEVICE_CUDA_HOST && !got->host_copy &&
        ic_device_is_cuda(st->c->device)) {
        /* The host reads pinned memory like the GPU's consumer would, after the work ordered
         * before `stream` has run: synchronising that stream is the host's way to wait. */
        if (ic_cuda_stream_synchronize(ic_gpu(), stream, err, sizeof(err)) < 0) {
            snprintf(note, size, "%s could not be ordered on its stream: %s", who, err);
            return IC_EIO;
        }
    }
    if (ic_host_readable(got)) {
        /* The pattern is the case's own buffer (ic_stage_build): only `got` needs the guard. */
        int rc = ic_view_compare_own(&st->expected, got, &cmp);
        if (rc == IC_EFAULT && cmp.unreadable == 2) {
            /* The guard found it before any byte was read: a verdict, not a crash. */
            char index[96];
            ic_view_format_index(got, cmp.unreadable_index, index, sizeof(index));
            snprintf(note, size,
                     "%s cannot be read: its element %s lies in memory that is not mapped "
                     "readable (at 0x%llx; the array starts at 0x%llx)",
                     who, index, (unsigned long long)cmp.unreadable_address,
                     (unsigned long long)got->data);
            return IC_EFAULT;
        }
        if (rc < 0) {
            snprintf(note, size, "%s cannot be compared with the pattern (%s)", who,
                     ic_strerror(rc));
            return IC_EINVAL;
        }
    } else {
        struct ic_pattern_ref ref;
        if (ic_expected_pattern(st, st->seed, &ref) < 0) {
            snprintf(note, size, "%s has %d dimensions, more than the GPU check takes", who,
                     st->expected.ndim);
            return IC_EUNSUPPORTED;
        }
        struct ic_cuda *cuda = ic_gpu();
        if (!cuda || ic_cuda_state(cuda) != IC_CUDA_READY) {
            snprintf(note, size, "%s is in device memory and no GPU can read it: %s", who,
                     cuda ? ic_cuda_reason(cuda) : "no CUDA driver");
            return IC_EUNSUPPORTED;
        }
        int rc = ic_cuda_check_pattern(cuda, got, &ref, stream, &cmp, err, sizeof(err));
        if (rc < 0) {
            snprintf(note, size, "%s could not be checked on the GPU: %s", who, err);
            return rc;
        }
    }
    if (cmp.mismatches == 0)
        return 1;
    char index[96];
    ic_view_format_index(&st->expected, cmp.first_mismatch, index, sizeof(index));
    snprintf(note, size, "%s: %lld of %lld elements differ from the pattern, the first at %s", who,
             (long long)cmp.mismatches, (long long)cmp.compared, index);
    return 0;
}

/* Whether the expected view's element at C-order `index` is one the case made null: its base
 * element's index, through the layout, picked by ic_pattern_is_null. */
static bool ic_expected_null(const struct ic_case_state *st, int64_t index)
{
    const struct ic_view *x = &st->expected;
    int64_t at = (int64_t)(x->data - (uintptr_t)st->base) + ic_view_offset_of(x, index);
    return ic_pattern_is_null(at / x->itemsize);
}

/* A copy of `got`'s elements in C order, where each element the case made null holds the
 * pattern's value instead of the undefined one the library left there: the compare then
 * judges the valid elements only. `*ret_buf` (the caller frees it) holds the copy. */
static int ic_fill_nulls(const struct ic_case_state *st, const struct ic_view *got,
                         struct ic_view *ret_filled, void **ret_buf, const char *who, char *note,
                         size_t size)
{
    int64_t numel = 0, bad_index = 0;
    uintptr_t bad = 0;
    if (ic_view_numel(got, &numel) < 0 || got->itemsize != st->expected.itemsize)
        return IC_EINVAL;
    int rc = ic_guard_view(got, &bad_index, &bad);
    if (rc == IC_EFAULT) {
        char index[96];
        ic_view_format_index(got, bad_index, index, sizeof(index));
        snprintf(note, size,
                 "%s cannot be read: its element %s lies in memory that is not mapped readable "
                 "(at 0x%llx)",
                 who, index, (unsigned long long)bad);
        return IC_EFAULT;
    }
    if (rc < 0) {
        snprintf(note, size, "%s cannot be compared with the pattern (%s)", who, ic_strerror(rc));
        return IC_EINVAL;
    }
    unsigned char *buf = malloc(numel > 0 ? (size_t)(numel * got->itemsize) : 1);
    if (!buf)
        return IC_ENOMEM;
    size_t itemsize = (size_t)got->itemsize;
    for (int64_t i = 0; i < numel; i++) {
        const struct ic_view *from = ic_expected_null(st, i) ? &st->expected : got;
        memcpy(buf + (size_t)i * itemsize,
               (const void *)(from->data + (uintptr_t)ic_view_offset_of(from, i)), itemsize);
    }
    *ret_filled = *got;
    ret_filled->data = numel > 0 ? (uintptr_t)buf : 0;
    ic_view_set_c_strides(ret_filled);
    *ret_buf = buf;
    return 0;
}

int ic_pattern_compare(const struct ic_case_state *st, const struct ic_view *got, uintptr_t stream,
                       const char *who, char *note, size_t size)
{
    if (!ic_variant_has_nulls(st->c->variant) || !ic_host_readable(got))
        return ic_pattern_compare_view(st, got, stream, who, note, size);
    struct ic_view filled;
    void *buf = NULL;
    int rc = ic_fill_nulls(st, got, &filled, &buf, who, note, size);
    if (rc == 0)
        rc = ic_pattern_compare_view(st, &filled, stream, who, note, size);
    free(buf);
    return rc;
}

/* Unpacks `got`'s validity (BITMAP or BYTES) into valid[i], 0 for a null. IC_EFAULT when the
 * library's bitmap cannot be read. */
static int ic_unpack_validity(const struct ic_view *got, int64_t numel, unsigned char *valid)
{
    if (got->validity_kind == IC_VALIDITY_BYTES) {
        memcpy(valid, (const void *)got->validity, (size_t)numel);
        return 0;
    }
    int64_t first = got->validity_bit / 8, last = (got->validity_bit + numel - 1) / 8;
    unsigned char *bits = malloc((size_t)(last - first + 1));
    if (!bits)
        return IC_ENOMEM;
    int rc = ic_guard_copy(bits, got->validity + (uintptr_t)first, (size_t)(last - first + 1));
    for (int64_t i = 0; rc == 0 && i < numel; i++) {
        int64_t bit = got->validity_bit + i - first * 8;
        valid[i] = (bits[bit / 8] >> (bit % 8)) & 1;
    }
    free(bits);
    return rc;
}

int ic_nulls_compare(const struct ic_case_state *st, const struct ic_view *got, const char *who,
                     char *note, size_t size)
{
    int64_t numel = 0, expected_nulls = 0;
    ic_view_numel(&st->expected, &numel);
    for (int64_t i = 0; i < numel; i++)
        expected_nulls += ic_expected_null(st, i);
    if (got->validity_kind == IC_VALIDITY_UNKNOWN) {
        snprintf(note, size, "%s cannot say which of its elements are null", who);
        return IC_ENOTFOUND;
    }
    if (got->validity_kind == IC_VALIDITY_NONE || numel == 0) {
        if (expected_nulls == 0)
            return 1;
        snprintf(note, size,
                 "%s has no nulls, where %lld of its %lld elements are null: they read as "
                 "values",
                 who, (long long)expected_nulls, (long long)numel);
        return 0;
    }
    unsigned char *valid = malloc((size_t)numel);
    if (!valid)
        return IC_ENOMEM;
    int rc = ic_unpack_validity(got, numel, valid);
    if (rc < 0) {
        snprintf(note, size, "the validity bitmap of %s at 0x%llx cannot be read", who,
                 (unsigned long long)got->validity);
        free(valid);
        return rc == IC_ENOMEM ? rc : IC_EFAULT;
    }
    int64_t wrong = 0, first_wrong = -1;
    for (int64_t i = 0; i < numel; i++) {
        if ((valid[i] == 0) != ic_expected_null(st, i) && wrong++ == 0)
            first_wrong = i;
    }
    bool first_is_null = first_wrong >= 0 && valid[first_wrong] == 0;
    free(valid);
    if (wrong == 0)
        return 1;
    char index[96];
    ic_view_format_index(&st->expected, first_wrong, index, sizeof(index));
    snprintf(note, size,
             "%s marks %lld of %lld elements wrongly as null or valid: the first, element %s, "
             "is %s where it should be %s",
             who, (long long)wrong, (long long)numel, index, first_is_null ? "null" : "valid",
             first_is_null ? "valid" : "null");
    return 0;
}
