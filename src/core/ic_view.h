/*
 * ic_view: the one description of an array that every protocol parser produces, and the
 * host-side operations on it (element addressing, span, contiguity, strided compare).
 *
 * Contract
 * - A view describes memory; it never owns it. `data` is the address of the first element
 *   (a DLPack byte_offset or an array-interface offset is already applied). Strides are in
 *   bytes, may be zero or negative, and are always filled (a parser that reads "no strides"
 *   writes the C-contiguous ones).
 * - Views are plain values: copy them with `=`. No function here allocates.
 * - Arithmetic is overflow-checked; a view whose addressed span does not fit in int64 is
 *   rejected with IC_ERANGE rather than wrapped.
 * - ic_view_compare reads host memory through both views' strides, and only after the guard
 *   (ic_guard.h) found every element of both readable: a view that points at unmapped memory
 *   is IC_EFAULT, never a fault. It must still only be called on views whose memory is
 *   host-accessible (not device memory) and alive; callers (ic_exchange) keep the owning
 *   Python objects referenced while comparing. ic_view_compare_own trusts its first view,
 *   memory the caller made, and guards only the second. ic_view_compare_addresses reads no
 *   memory.
 */
#ifndef IC_VIEW_H
#define IC_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_dtype.h"

/* NumPy's NPY_MAXDIMS; protocols.md DLPack rule 12 and buffer rule 1 use the same bound. */
#define IC_MAX_NDIM 64

/* Device types use DLPack's numbering (protocols.md §2.2), which Arrow shares. */
enum {
    IC_DEVICE_CPU = 1,
    IC_DEVICE_CUDA = 2,
    IC_DEVICE_CUDA_HOST = 3,
    IC_DEVICE_ROCM_HOST = 11,
    IC_DEVICE_CUDA_MANAGED = 13,
};

/* Host-accessible memory (the CPU, pinned and managed memory), for which DLPack fixes the device
 * id at 0: every id of such a type names one address space. */
static inline bool ic_device_type_is_host(int32_t type)
{
    return type == IC_DEVICE_CPU || type == IC_DEVICE_CUDA_HOST || type == IC_DEVICE_ROCM_HOST ||
           type == IC_DEVICE_CUDA_MANAGED;
}

/* Whether (type_a, id_a) and (type_b, id_b) name the same memory: the same type, and the same
 * id unless the type is host memory. */
static inline bool ic_device_same_memory(int32_t type_a, int64_t id_a, int32_t type_b,
                                         int64_t id_b)
{
    return type_a == type_b && (id_a == id_b || ic_device_type_is_host(type_a));
}

struct ic_view {
    uintptr_t data; /* first element; 0 is allowed only when the view has no elements */
    int32_t device_type;
    int64_t device_id;
    enum ic_dtype dtype; /* IC_DTYPE_INVALID when the source carries no dtype (raw bytes) */
    int itemsize;        /* bytes per element, also for raw-byte views */
    int ndim;
    int64_t shape[IC_MAX_NDIM];
    int64_t strides[IC_MAX_NDIM]; /* bytes */
    bool readonly;
    bool readonly_known; /* false when the source cannot say (legacy DLPack) */
    /* data is a host copy of the elements, which live on device_type: a library with no
     * pointer API handed over its contents only. Compare on the host; addresses mean nothing. */
    bool host_copy;
    /* Nulls of a 1-D Arrow array: which elements hold no value (those values are undefined).
     * UNKNOWN where the source cannot say (every protocol but Arrow's), NONE where it says
     * every element is valid, BITMAP where the host bitmap at `validity` marks element i valid
     * by its bit validity_bit + i (Arrow's order: least significant bit first), BYTES where
     * the byte at validity + i is 0 for a null (a probe's copy, from the library's own API). */
    enum ic_validity_kind {
        IC_VALIDITY_UNKNOWN,
        IC_VALIDITY_NONE,
        IC_VALIDITY_BITMAP,
        IC_VALIDITY_BYTES,
    } validity_kind;
    uintptr_t validity;
    int64_t validity_bit;
};

/* Fill `view` with C-contiguous strides for its shape and itemsize. IC_ERANGE on overflow. */
int ic_view_set_c_strides(struct ic_view *view);

/* Number of elements, overflow-checked. */
int ic_view_numel(const struct ic_view *view, int64_t *ret_numel);

/* Lowest and highest byte offsets, relative to `data`, that the view addresses (the highest
 * one is the first byte past the last element). Both are 0 for an empty view. */
int ic_view_span(const struct ic_view *view, int64_t *ret_lo, int64_t *ret_hi);

/* True when the elements are laid out C-contiguously; strides of dimensions of size 1 are
 * ignored (protocols.md DLPack rule 15), and an empty view is contiguous. */
bool ic_view_is_c_contiguous(const struct ic_view *view);
bool ic_view_is_f_contiguous(const struct ic_view *view);

/* Byte offset of the element at the C-order linear `index`. The caller ensures
 * 0 <= index < numel. */
int64_t ic_view_offset_of(const struct ic_view *view, int64_t index);

/* Writes a multi-index in "[i,j,k]" form for the C-order linear `index` into buf. */
void ic_view_format_index(const struct ic_view *view, int64_t index, char *buf, int size);

/* Writes "(2, 3, 4)" style text of the shape / byte strides. */
void ic_view_format_shape(const struct ic_view *view, char *buf, int size);
void ic_view_format_strides(const struct ic_view *view, char *buf, int size);

struct ic_compare_result {
    int64_t compared;       /* elements compared */
    int64_t mismatches;     /* elements whose bytes differ */
    int64_t first_mismatch; /* C-order linear index of the first one, -1 when none */
    /* Written on IC_EFAULT only: the view that cannot be read (1: a, 2: b), its first element
     * with an unreadable byte (C-order index) and that byte's page. */
    int unreadable;
    int64_t unreadable_index;
    uintptr_t unreadable_address;
};

/* Compares the bytes of every element of `a` and `b` in C order, each read through its own
 * strides. The views must have the same shape and itemsize (IC_EINVAL otherwise). Elements
 * compare as ic_view_compare_mode says. Contiguous runs are compared by memcmp, strided ones a
 * whole element (up to 8 bytes) at a time, so a large compare runs near memory speed. IC_EFAULT when
 * an element of either view cannot be read: nothing is compared, and `ret` says where (its
 * unreadable fields only). */
int ic_view_compare(const struct ic_view *a, const struct ic_view *b,
                    struct ic_compare_result *ret);

/* ic_view_compare where `own` is memory the caller allocated and filled itself (a case's
 * pattern), read without the guard: only `theirs`, a library's, goes through it (half the
 * system calls of a compare). On IC_EFAULT, ret->unreadable is 2. */
int ic_view_compare_own(const struct ic_view *own, const struct ic_view *theirs,
                        struct ic_compare_result *ret);

/* ic_view_compare without the guard: for views whose every element the caller has just found
 * readable (ic_guard_view) and that nothing can unmap before it returns. */
int ic_view_compare_elements(const struct ic_view *a, const struct ic_view *b,
                             struct ic_compare_result *ret);

/* How the elements of `a` and `b` compare (IC_LOGIC_CMP_* of ic_kernel_logic.h): as truth
 * values when both are bools (any non-zero byte is true), by their low four bits when both are
 * 4-bit integers, by their bytes otherwise. */
int ic_view_compare_mode(const struct ic_view *a, const struct ic_view *b);

/* Merges neighbouring dimensions that both stride sets walk as one (the outer stride is the
 * inner stride times the inner extent) and drops dimensions of extent 1, in place. The C-order
 * linear index of every element is unchanged, and a view contiguous in both becomes one
 * dimension. Returns the new number of dimensions (0 when at most one element remains). */
int ic_view_merge_dims(int ndim, int64_t *shape, int64_t *first, int64_t *second);

/* Checks that the host can read every element of the view (ic_guard_view). IC_EFAULT with
 * `why` naming the first element that cannot be read and where; IC_ERANGE for a view whose
 * span does not fit in int64; IC_EENV when the guard has no way to read (see ic_guard.h). */
int ic_view_check_readable(const struct ic_view *view, char *why, size_t size);

/* Compares the element addresses of `a` and `b` (same shape required): the number of
 * elements whose address differs and the first such index. Empty views compare equal. */
int ic_view_compare_addresses(const struct ic_view *a, const struct ic_view *b,
                              struct ic_compare_result *ret);

/* True when a and b have the same number of dimensions and the same extent in each. */
bool ic_view_same_shape(const struct ic_view *a, const struct ic_view *b);

#endif
