/* The check of an array's elements against the seeded pattern, shared by the exchange (the
 * producer's own array) and the judge (the export and the import). */
#include "ic_exchange_state.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_gpu.h"
#include "ic_pattern.h"

/* True when the host may read the view's memory directly (the CPU, pinned host memory, or
 * a host copy of a probe that could give only the contents). */
static bool ic_host_readable(const struct ic_view *view)
{
    return view->host_copy || view->device_type == IC_DEVICE_CPU ||
           view->device_type == IC_DEVICE_CUDA_HOST;
}

/* The GPU's description of the expected view's elements: the pattern of `seed` over the
 * layout's base, addressed like the expected view. IC_EUNSUPPORTED when the view has more
 * dimensions than the kernels take. */
int ic_expected_pattern(const struct ic_case_state *st, uint64_t seed, struct ic_pattern_ref *ref)
{
    const struct ic_dtype_info *info = ic_dtype_info(st->c->dtype);
    const struct ic_view *x = &st->expected;
    if (x->ndim > IC_CUDA_MAX_NDIM)
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
int ic_pattern_compare(const struct ic_case_state *st, const struct ic_view *got, uintptr_t stream,
                       const char *who, char *note, size_t size)
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
        int rc = ic_view_compare(&st->expected, got, &cmp);
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
