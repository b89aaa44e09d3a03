/*
 * ic_layout: the memory layouts of the matrix, as recipes of view operations on a 1-D base.
 *
 * Contract
 * - A layout is a base length and a short list of operations (reshape, permute, slice,
 *   broadcast) with NumPy semantics. Probes apply the same list to their own arrays
 *   (probes/README.md), and ic_layout_apply computes in C which base element every index of
 *   the result is: that is the expected view the exchange is checked against. The C side
 *   never asks a library what a layout should look like.
 * - The table is static; nothing here allocates or touches Python. ic_layout_set_size (the
 *   run's --size) changes the 1-D layouts' lengths once, before anything is planned or run;
 *   the supervisor and every worker make the same call.
 */
#ifndef IC_LAYOUT_H
#define IC_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "ic_view.h"

#define IC_LAYOUT_MAX_OPS 3
#define IC_LAYOUT_MAX_RANK 32
/* A missing slice bound (Python's None). */
#define IC_SLICE_NONE INT64_MIN

enum ic_layout_op_kind {
    IC_OP_RESHAPE,
    IC_OP_PERMUTE,
    IC_OP_SLICE,
    IC_OP_BROADCAST,
    IC_OP_UNIT_STRIDE, /* dims = {dimension, stride in bytes}: restrides a size-1 dimension */
    /* A lazy negation or conjugation over memory that holds the negated or conjugated
     * elements (torch's negative and conjugate bits): the array's values, and so its expected
     * view, are those of the array before the op. */
    IC_OP_NEG_VIEW,
    IC_OP_CONJ_VIEW,
    /* The same array as a tensor that records gradients, or as an instance of a subclass of the
     * library's array type (torch's requires_grad, torch.nn.Parameter): values and memory as
     * before the op. */
    IC_OP_REQUIRES_GRAD,
    IC_OP_SUBCLASS,
    /* The same values on the library's second device of the case's kind (JAX's cpu:1): where
     * an array lives is not where the exchange assumes it does, and its values are as before. */
    IC_OP_OTHER_DEVICE,
    IC_OP_COUNT
};

struct ic_layout_op {
    enum ic_layout_op_kind kind;
    int n;                               /* number of dims (reshape/permute/broadcast) or slices */
    int64_t dims[IC_LAYOUT_MAX_RANK];    /* reshape/broadcast shape, permute order, unit stride */
    int64_t slice[IC_LAYOUT_MAX_RANK][3]; /* start, stop, step; IC_SLICE_NONE for a missing bound */
};

/* The order is the matrix dimension's order; ic_layout.c holds each layout's recipe. */
enum ic_layout {
    IC_LAYOUT_CONTIGUOUS,
    IC_LAYOUT_FLAT,
    IC_LAYOUT_FORTRAN,
    IC_LAYOUT_TRANSPOSED,
    IC_LAYOUT_STRIDED,
    IC_LAYOUT_REVERSED,
    IC_LAYOUT_OFFSET,
    IC_LAYOUT_SCALAR,
    IC_LAYOUT_EMPTY,
    IC_LAYOUT_UNIT_DIMS,
    IC_LAYOUT_BROADCAST,
    IC_LAYOUT_UNIT_DIMS_ODD,
    IC_LAYOUT_BROADCAST_INNER,
    IC_LAYOUT_NDIM32,
    IC_LAYOUT_NEG_VIEW,
    IC_LAYOUT_CONJ_VIEW,
    IC_LAYOUT_REQUIRES_GRAD,
    IC_LAYOUT_SUBCLASS,
    IC_LAYOUT_OTHER_DEVICE,
    IC_LAYOUT_COUNT
};

struct ic_layout_info {
    enum ic_layout layout;
    const char *name;
    const char *summary;
    int64_t base_len; /* elements of the 1-D base the ops start from */
    int nops;
    struct ic_layout_op ops[IC_LAYOUT_MAX_OPS];
};

const struct ic_layout_info *ic_layout_info(enum ic_layout layout);

/* The largest --size: elements of the 1-D layouts. */
#define IC_LAYOUT_SIZE_MAX (INT64_C(1) << 32)

/* --size: the 1-D layouts hold `elements` elements: flat and reversed directly, strided as
 * every third of 3 * elements + 1 (from index 1). The other layouts keep their small fixed
 * shapes, which are about shape rules, not volume. IC_ERANGE outside 1..IC_LAYOUT_SIZE_MAX.
 * Not thread-safe: call it before any case is planned or run. */
int ic_layout_set_size(int64_t elements);

/* True when the layout ends in a lazy value view (IC_OP_NEG_VIEW, IC_OP_CONJ_VIEW): the
 * array's memory then holds other bytes than its values, by construction. */
bool ic_layout_is_value_view(const struct ic_layout_info *layout);
const char *ic_layout_name(enum ic_layout layout);
int ic_layout_from_name(const char *name, enum ic_layout *ret);

/* Applies the layout's ops to a C-contiguous 1-D view of `base_len` elements at `base`
 * (itemsize and dtype taken from `base`), giving the view the layout describes. IC_EINVAL
 * for a recipe the ops cannot express (a bug in the table); IC_ERANGE on overflow. */
int ic_layout_apply(const struct ic_layout_info *layout, const struct ic_view *base,
                    struct ic_view *ret);

/* Python-style slice arithmetic (PySlice_AdjustIndices) for one dimension: the first index,
 * the step and the number of elements selected. Exposed for the unit tests. */
void ic_slice_adjust(int64_t length, const int64_t slice[3], int64_t *ret_start,
                     int64_t *ret_step, int64_t *ret_count);

#endif
