/* The views' reading half: comparing their elements and checking them readable, both through
 * the guard (ic_guard.h), which itself needs only the views' geometry (ic_view.c). */
#include "ic_view.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_kernel_logic.h"

int ic_view_compare(const struct ic_view *a, const struct ic_view *b, struct ic_compare_result *ret)
{
    if (!ic_view_same_shape(a, b) || a->itemsize != b->itemsize || a->itemsize <= 0)
        return IC_EINVAL;
    int64_t numel;
    int rc = ic_view_numel(a, &numel);
    if (rc < 0)
        return rc;
    /* Both views' elements are checked once, before any is read: one system call per batch
     * of pages instead of one per element, and a library's bad pointer is a verdict. */
    const struct ic_view *views[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int64_t bad_index = 0;
        uintptr_t bad_address = 0;
        rc = ic_guard_view(views[i], &bad_index, &bad_address);
        if (rc == IC_EFAULT) {
            ret->unreadable = i + 1;
            ret->unreadable_index = bad_index;
            ret->unreadable_address = bad_address;
        }
        if (rc < 0)
            return rc;
    }
    bool as_bool = a->dtype == IC_DTYPE_BOOL && b->dtype == IC_DTYPE_BOOL;
    struct ic_compare_result result = {.compared = numel, .mismatches = 0, .first_mismatch = -1};
    /* Walk both views with an odometer rather than dividing per element: the compare of a
     * large array must stay near memory speed. */
    int64_t index[IC_MAX_NDIM] = {0};
    const unsigned char *pa = (const unsigned char *)a->data;
    const unsigned char *pb = (const unsigned char *)b->data;
    for (int64_t n = 0; n < numel; n++) {
        if (!ic_logic_equal(pa, pb, a->itemsize, as_bool)) {
            if (result.mismatches == 0)
                result.first_mismatch = n;
            result.mismatches++;
        }
        for (int d = a->ndim - 1; d >= 0; d--) {
            if (++index[d] < a->shape[d]) {
                pa += a->strides[d];
                pb += b->strides[d];
                break;
            }
            pa -= a->strides[d] * (a->shape[d] - 1);
            pb -= b->strides[d] * (b->shape[d] - 1);
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
