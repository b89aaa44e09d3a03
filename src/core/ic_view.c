#include "ic_view.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_kernel_logic.h"

int ic_view_set_c_strides(struct ic_view *view)
{
    int64_t stride = view->itemsize;
    for (int i = view->ndim - 1; i >= 0; i--) {
        view->strides[i] = stride;
        int64_t extent = view->shape[i] > 1 ? view->shape[i] : 1;
        if (__builtin_mul_overflow(stride, extent, &stride))
            return IC_ERANGE;
    }
    return 0;
}

int ic_view_numel(const struct ic_view *view, int64_t *ret_numel)
{
    int64_t numel = 1;
    for (int i = 0; i < view->ndim; i++) {
        if (view->shape[i] < 0)
            return IC_ERANGE;
        if (__builtin_mul_overflow(numel, view->shape[i], &numel))
            return IC_ERANGE;
    }
    *ret_numel = numel;
    return 0;
}

int ic_view_span(const struct ic_view *view, int64_t *ret_lo, int64_t *ret_hi)
{
    int64_t numel;
    int rc = ic_view_numel(view, &numel);
    if (rc < 0)
        return rc;
    if (numel == 0) {
        *ret_lo = 0;
        *ret_hi = 0;
        return 0;
    }
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < view->ndim; i++) {
        int64_t reach;
        if (__builtin_mul_overflow(view->strides[i], view->shape[i] - 1, &reach))
            return IC_ERANGE;
        if (reach < 0) {
            if (__builtin_add_overflow(lo, reach, &lo))
                return IC_ERANGE;
        } else if (__builtin_add_overflow(hi, reach, &hi)) {
            return IC_ERANGE;
        }
    }
    if (__builtin_add_overflow(hi, (int64_t)view->itemsize, &hi))
        return IC_ERANGE;
    *ret_lo = lo;
    *ret_hi = hi;
    return 0;
}

/* Dense in C order (the last dimension varies fastest) or in Fortran order (the first). */
static bool ic_view_dense(const struct ic_view *view, bool fortran)
{
    int64_t expected = view->itemsize;
    for (int i = 0; i < view->ndim; i++) {
        if (view->shape[i] == 0)
            return true;
    }
    for (int k = 0; k < view->ndim; k++) {
        int i = fortran ? k : view->ndim - 1 - k;
        if (view->shape[i] == 1)
            continue;
        if (view->strides[i] != expected)
            return false;
        expected *= view->shape[i];
    }
    return true;
}

bool ic_view_is_c_contiguous(const struct ic_view *view)
{
    return ic_view_dense(view, false);
}

bool ic_view_is_f_contiguous(const struct ic_view *view)
{
    return ic_view_dense(view, true);
}

int64_t ic_view_offset_of(const struct ic_view *view, int64_t index)
{
    return ic_logic_offset(index, view->ndim, view->shape, view->strides);
}

void ic_view_format_index(const struct ic_view *view, int64_t index, char *buf, int size)
{
    int64_t coords[IC_MAX_NDIM];
    for (int i = view->ndim - 1; i >= 0; i--) {
        coords[i] = view->shape[i] > 0 ? index % view->shape[i] : 0;
        index = view->shape[i] > 0 ? index / view->shape[i] : 0;
    }
    int used = snprintf(buf, (size_t)size, "[");
    for (int i = 0; i < view->ndim && used < size; i++)
        used += snprintf(buf + used, (size_t)(size - used), "%s%lld", i ? "," : "",
                         (long long)coords[i]);
    if (used < size)
        snprintf(buf + used, (size_t)(size - used), "]");
}

static void ic_format_tuple(const int64_t *values, int n, char *buf, int size)
{
    int used = snprintf(buf, (size_t)size, "(");
    for (int i = 0; i < n && used < size; i++)
        used += snprintf(buf + used, (size_t)(size - used), "%s%lld", i ? ", " : "",
                         (long long)values[i]);
    if (used < size)
        snprintf(buf + used, (size_t)(size - used), n == 1 ? ",)" : ")");
}

void ic_view_format_shape(const struct ic_view *view, char *buf, int size)
{
    ic_format_tuple(view->shape, view->ndim, buf, size);
}

void ic_view_format_strides(const struct ic_view *view, char *buf, int size)
{
    ic_format_tuple(view->strides, view->ndim, buf, size);
}

bool ic_view_same_shape(const struct ic_view *a, const struct ic_view *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i])
            return false;
    }
    return true;
}

int ic_view_compare_addresses(const struct ic_view *a, const struct ic_view *b,
                              struct ic_compare_result *ret)
{
    if (!ic_view_same_shape(a, b))
        return IC_EINVAL;
    int64_t numel;
    int rc = ic_view_numel(a, &numel);
    if (rc < 0)
        return rc;
    struct ic_compare_result result = {.compared = numel, .mismatches = 0, .first_mismatch = -1};
    for (int64_t n = 0; n < numel; n++) {
        uintptr_t xa = a->data + (uintptr_t)ic_view_offset_of(a, n);
        uintptr_t xb = b->data + (uintptr_t)ic_view_offset_of(b, n);
        if (xa != xb) {
            if (result.mismatches == 0)
                result.first_mismatch = n;
            result.mismatches++;
        }
    }
    *ret = result;
    return 0;
}
