#include "ic_layout.h"

#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

#define N IC_SLICE_NONE
#define RESHAPE(...)                                                                               \
    {.kind = IC_OP_RESHAPE,                                                                        \
     .n = sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t),                                      \
     .dims = {__VA_ARGS__}}
#define RESHAPE_0D {.kind = IC_OP_RESHAPE, .n = 0}
#define PERMUTE(...)                                                                               \
    {.kind = IC_OP_PERMUTE,                                                                        \
     .n = sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t),                                      \
     .dims = {__VA_ARGS__}}
#define BROADCAST(...)                                                                             \
    {.kind = IC_OP_BROADCAST,                                                                      \
     .n = sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t),                                      \
     .dims = {__VA_ARGS__}}
#define UNIT_STRIDE(dim, bytes) {.kind = IC_OP_UNIT_STRIDE, .n = 2, .dims = {(dim), (bytes)}}
#define NEG_VIEW {.kind = IC_OP_NEG_VIEW, .n = 0}
#define CONJ_VIEW {.kind = IC_OP_CONJ_VIEW, .n = 0}
#define REQUIRES_GRAD {.kind = IC_OP_REQUIRES_GRAD, .n = 0}
#define SUBCLASS {.kind = IC_OP_SUBCLASS, .n = 0}
#define OTHER_DEVICE {.kind = IC_OP_OTHER_DEVICE, .n = 0}
#define SLICE1(start, stop, step)                                                                  \
    {.kind = IC_OP_SLICE, .n = 1, .slice = {{(start), (stop), (step)}}}

/* The recipes are mirrored in probes/README.md; tests/integration/test_probes.py checks the
 * probes against the same numbers. */
static struct ic_layout_info ic_layout_table[IC_LAYOUT_COUNT] = {
    [IC_LAYOUT_CONTIGUOUS] = {IC_LAYOUT_CONTIGUOUS, "contiguous", "C order, shape (2, 3, 4)", 24, 1, {RESHAPE(2, 3, 4)}},
    [IC_LAYOUT_FLAT] = {IC_LAYOUT_FLAT, "flat", "1-D C order, 24 elements (--size sets them)", 24, 0, {{0}}},
    [IC_LAYOUT_FORTRAN] = {IC_LAYOUT_FORTRAN, "fortran", "Fortran order, shape (2, 3, 4)", 24, 2,
                           {RESHAPE(4, 3, 2), PERMUTE(2, 1, 0)}},
    [IC_LAYOUT_TRANSPOSED] = {IC_LAYOUT_TRANSPOSED, "transposed", "axes (1, 0, 2) of a (2, 3, 4) array: neither C nor F order", 24, 2,
                              {RESHAPE(2, 3, 4), PERMUTE(1, 0, 2)}},
    [IC_LAYOUT_STRIDED] = {IC_LAYOUT_STRIDED, "strided", "every third element from index 1: a step and an offset", 31, 1, {SLICE1(1, N, 3)}},
    [IC_LAYOUT_REVERSED] = {IC_LAYOUT_REVERSED, "reversed", "a negative stride ([::-1])", 12, 1, {SLICE1(N, N, -1)}},
    [IC_LAYOUT_OFFSET] = {IC_LAYOUT_OFFSET, "offset", "elements 5..12 of 16: the first element is not the allocation start", 16, 1, {SLICE1(5, 13, 1)}},
    [IC_LAYOUT_SCALAR] = {IC_LAYOUT_SCALAR, "scalar", "0-d", 1, 1, {RESHAPE_0D}},
    [IC_LAYOUT_EMPTY] = {IC_LAYOUT_EMPTY, "empty", "no elements", 0, 0, {{0}}},
    [IC_LAYOUT_UNIT_DIMS] = {IC_LAYOUT_UNIT_DIMS, "unit_dims", "shape (2, 1, 6) whose size-1 dimension has a non-C stride", 12, 2,
                             {RESHAPE(2, 6, 1), PERMUTE(0, 2, 1)}},
    [IC_LAYOUT_BROADCAST] = {IC_LAYOUT_BROADCAST, "broadcast", "a (1, 4) row broadcast to (3, 4): a zero stride", 4, 2,
                             {RESHAPE(1, 4), BROADCAST(3, 4)}},
    [IC_LAYOUT_UNIT_DIMS_ODD] = {IC_LAYOUT_UNIT_DIMS_ODD, "unit_dims_odd", "shape (2, 1, 6) whose size-1 dimension has a stride of 3 bytes: a multiple of no itemsize above 1", 12, 2,
                                 {RESHAPE(2, 1, 6), UNIT_STRIDE(1, 3)}},
    [IC_LAYOUT_BROADCAST_INNER] = {IC_LAYOUT_BROADCAST_INNER, "broadcast_inner", "a (3, 1) column broadcast to (3, 4): a zero stride in the last dimension", 3, 2,
                                   {RESHAPE(3, 1), BROADCAST(3, 4)}},
    [IC_LAYOUT_NDIM32] = {IC_LAYOUT_NDIM32, "ndim32", "32 dimensions: (2, 3, 4) and 29 of size 1, in C order", 24, 1,
                          {RESHAPE(2, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)}},
    [IC_LAYOUT_NEG_VIEW] = {IC_LAYOUT_NEG_VIEW, "neg_view", "(2, 3, 4) under a lazy negation: the memory holds the negated elements (torch's negative bit; dtypes without a negation as they are)", 24, 2,
                            {RESHAPE(2, 3, 4), NEG_VIEW}},
    [IC_LAYOUT_CONJ_VIEW] = {IC_LAYOUT_CONJ_VIEW, "conj_view", "(2, 3, 4) under a lazy conjugation: the memory holds the conjugated elements (torch's conjugate bit; real dtypes as they are)", 24, 2,
                             {RESHAPE(2, 3, 4), CONJ_VIEW}},
    [IC_LAYOUT_REQUIRES_GRAD] = {IC_LAYOUT_REQUIRES_GRAD, "requires_grad", "(2, 3, 4) recording gradients (torch's requires_grad; dtypes without gradients as they are)", 24, 2,
                                 {RESHAPE(2, 3, 4), REQUIRES_GRAD}},
    [IC_LAYOUT_SUBCLASS] = {IC_LAYOUT_SUBCLASS, "subclass", "(2, 3, 4) as an instance of a subclass of the library's array type (torch.nn.Parameter, not recording gradients)", 24, 2,
                            {RESHAPE(2, 3, 4), SUBCLASS}},
    [IC_LAYOUT_OTHER_DEVICE] = {IC_LAYOUT_OTHER_DEVICE, "other_device", "(2, 3, 4) on the library's second device of the case's kind, not its default one (JAX's cpu:1 with two host devices)", 24, 2,
                                {RESHAPE(2, 3, 4), OTHER_DEVICE}},
};

int ic_layout_set_size(int64_t elements)
{
    if (elements < 1 || elements > IC_LAYOUT_SIZE_MAX)
        return IC_ERANGE;
    ic_layout_table[IC_LAYOUT_FLAT].base_len = elements;
    ic_layout_table[IC_LAYOUT_REVERSED].base_len = elements;
    ic_layout_table[IC_LAYOUT_STRIDED].base_len = 3 * elements + 1;
    return 0;
}

const struct ic_layout_info *ic_layout_info(enum ic_layout layout)
{
    return IC_TABLE_ROW(ic_layout_table, layout, IC_LAYOUT_COUNT);
}

bool ic_layout_is_value_view(const struct ic_layout_info *layout)
{
    for (int i = 0; i < layout->nops; i++) {
        if (layout->ops[i].kind == IC_OP_NEG_VIEW || layout->ops[i].kind == IC_OP_CONJ_VIEW)
            return true;
    }
    return false;
}

const char *ic_layout_name(enum ic_layout layout)
{
    return IC_TABLE_FIELD(ic_layout_table, layout, IC_LAYOUT_COUNT, name, "invalid");
}

IC_DEFINE_TABLE_LOOKUP(ic_layout_from_name, enum ic_layout, ic_layout_table, name)

static int64_t ic_clamp_bound(int64_t value, int64_t length, int64_t step)
{
    if (value < 0) {
        value += length;
        if (value < 0)
            value = step < 0 ? -1 : 0;
    } else if (value >= length) {
        value = step < 0 ? length - 1 : length;
    }
    return value;
}

void ic_slice_adjust(int64_t length, const int64_t slice[3], int64_t *ret_start,
                     int64_t *ret_step, int64_t *ret_count)
{
    int64_t step = slice[2] == IC_SLICE_NONE ? 1 : slice[2];
    int64_t start, stop;
    if (slice[0] == IC_SLICE_NONE)
        start = step < 0 ? length - 1 : 0;
    else
        start = ic_clamp_bound(slice[0], length, step);
    if (slice[1] == IC_SLICE_NONE)
        stop = step < 0 ? -1 : length;
    else
        stop = ic_clamp_bound(slice[1], length, step);
    int64_t count = 0;
    if (step < 0 && stop < start)
        count = (start - stop - 1) / (-step) + 1;
    else if (step > 0 && start < stop)
        count = (stop - start - 1) / step + 1;
    *ret_start = start;
    *ret_step = step;
    *ret_count = count;
}

static int ic_apply_reshape(const struct ic_layout_op *op, struct ic_view *view)
{
    /* Only defined here for contiguous input, which every recipe guarantees (reshape first). */
    if (!ic_view_is_c_contiguous(view) || op->n > IC_MAX_NDIM)
        return IC_EINVAL;
    int64_t before, after = 1;
    int rc = ic_view_numel(view, &before);
    if (rc < 0)
        return rc;
    for (int i = 0; i < op->n; i++)
        after *= op->dims[i];
    if (after != before)
        return IC_EINVAL;
    view->ndim = op->n;
    for (int i = 0; i < op->n; i++)
        view->shape[i] = op->dims[i];
    return ic_view_set_c_strides(view);
}

static int ic_apply_permute(const struct ic_layout_op *op, struct ic_view *view)
{
    if (op->n != view->ndim)
        return IC_EINVAL;
    int64_t shape[IC_LAYOUT_MAX_RANK], strides[IC_LAYOUT_MAX_RANK];
    for (int i = 0; i < op->n; i++) {
        if (op->dims[i] < 0 || op->dims[i] >= op->n)
            return IC_EINVAL;
        shape[i] = view->shape[op->dims[i]];
        strides[i] = view->strides[op->dims[i]];
    }
    memcpy(view->shape, shape, sizeof(int64_t) * (size_t)op->n);
    memcpy(view->strides, strides, sizeof(int64_t) * (size_t)op->n);
    return 0;
}

static int ic_apply_slice(const struct ic_layout_op *op, struct ic_view *view)
{
    if (op->n > view->ndim)
        return IC_EINVAL;
    for (int i = 0; i < op->n; i++) {
        int64_t start, step, count;
        ic_slice_adjust(view->shape[i], op->slice[i], &start, &step, &count);
        if (count > 0)
            view->data += (uintptr_t)(start * view->strides[i]);
        view->strides[i] *= step;
        view->shape[i] = count;
    }
    return 0;
}

static int ic_apply_broadcast(const struct ic_layout_op *op, struct ic_view *view)
{
    if (op->n < view->ndim || op->n > IC_MAX_NDIM)
        return IC_EINVAL;
    int64_t shape[IC_MAX_NDIM], strides[IC_MAX_NDIM];
    int lead = op->n - view->ndim;
    for (int i = 0; i < op->n; i++) {
        shape[i] = op->dims[i];
        if (i < lead) {
            strides[i] = 0;
        } else if (view->shape[i - lead] == op->dims[i]) {
            strides[i] = view->strides[i - lead];
        } else if (view->shape[i - lead] == 1) {
            strides[i] = 0;
        } else {
            return IC_EINVAL;
        }
    }
    view->ndim = op->n;
    memcpy(view->shape, shape, sizeof(int64_t) * (size_t)op->n);
    memcpy(view->strides, strides, sizeof(int64_t) * (size_t)op->n);
    return 0;
}

/* Only a size-1 dimension may take any stride: its one element is reached through none. */
static int ic_apply_unit_stride(const struct ic_layout_op *op, struct ic_view *view)
{
    int64_t dim = op->dims[0];
    if (op->n != 2 || dim < 0 || dim >= view->ndim || view->shape[dim] != 1)
        return IC_EINVAL;
    view->strides[dim] = op->dims[1];
    return 0;
}

/* The lazy views keep the values, which is all the expected view describes. */
static int ic_apply_value_view(const struct ic_layout_op *op, struct ic_view *view)
{
    (void)view;
    return op->n == 0 ? 0 : IC_EINVAL;
}

static int (*const ic_layout_op_apply[IC_OP_COUNT])(const struct ic_layout_op *,
                                                    struct ic_view *) = {
    [IC_OP_RESHAPE] = ic_apply_reshape,
    [IC_OP_PERMUTE] = ic_apply_permute,
    [IC_OP_SLICE] = ic_apply_slice,
    [IC_OP_BROADCAST] = ic_apply_broadcast,
    [IC_OP_UNIT_STRIDE] = ic_apply_unit_stride,
    [IC_OP_NEG_VIEW] = ic_apply_value_view,
    [IC_OP_CONJ_VIEW] = ic_apply_value_view,
    [IC_OP_REQUIRES_GRAD] = ic_apply_value_view,
    [IC_OP_OTHER_DEVICE] = ic_apply_value_view,
    [IC_OP_SUBCLASS] = ic_apply_value_view,
};

int ic_layout_apply(const struct ic_layout_info *layout, const struct ic_view *base,
                    struct ic_view *ret)
{
    struct ic_view view = *base;
    view.ndim = 1;
    view.shape[0] = layout->base_len;
    view.strides[0] = view.itemsize;
    for (int i = 0; i < layout->nops; i++) {
        const struct ic_layout_op *op = &layout->ops[i];
        bool known = (int)op->kind >= 0 && op->kind < IC_OP_COUNT;
        int rc = known ? ic_layout_op_apply[op->kind](op, &view) : IC_EINVAL;
        if (rc < 0)
            return rc;
    }
    *ret = view;
    return 0;
}
