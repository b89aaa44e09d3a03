#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_dlpack.h"

#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_proxy.h"
#include "ic_python.h"
#include "ic_export.h"
#include "ic_watch.h"

struct ic_image_search {
    uintptr_t address;
    bool found;
};

static int ic_image_holds(struct dl_phdr_info *info, size_t size, void *data)
{
    struct ic_image_search *search = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && search->address - start < ph->p_memsz) {
            search->found = true;
            return 1;
        }
    }
    return 0;
}

/* The loader's counts of objects added and removed: what ic_in_loaded_image's memory of
 * earlier answers is valid for. */
struct ic_image_generation {
    unsigned long long adds, subs;
};

static int ic_image_read_generation(struct dl_phdr_info *info, size_t size, void *data)
{
    struct ic_image_generation *generation = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
        generation->adds = info->dlpi_adds;
        generation->subs = info->dlpi_subs;
    }
    return 1; /* the first object carries the counts */
}

/* Whether `p` lies in a loaded segment of the program or of a shared object. dladdr answers
 * the same and also looks for the nearest symbol, a walk of the whole symbol table of the
 * object (hundreds of thousands of symbols in libtorch): most of a case's checks' time. A
 * walk of every loaded object's segments is itself a few microseconds with TensorFlow, torch
 * and paddle loaded, and a producer names every capsule with the same static string: the
 * addresses found are remembered while no object is loaded or unloaded. */
static bool ic_in_loaded_image(const void *p)
{
    static const void *found[8];
    static unsigned next;
    static struct ic_image_generation known;
    struct ic_image_generation now = {0, 0};
    dl_iterate_phdr(ic_image_read_generation, &now);
    bool same = now.adds == known.adds && now.subs == known.subs && (now.adds || now.subs);
    if (!same) {
        memset(found, 0, sizeof(found));
        known = now;
    }
    for (unsigned i = 0; same && i < sizeof(found) / sizeof(found[0]); i++) {
        if (found[i] == p)
            return true;
    }
    struct ic_image_search search = {.address = (uintptr_t)p};
    dl_iterate_phdr(ic_image_holds, &search);
    if (search.found)
        found[next++ % (sizeof(found) / sizeof(found[0]))] = p;
    return search.found;
}

/* Type codes by number: the names of codes 7-17 only exist in headers >= 1.1, and the
 * tester must judge them whatever header it was built with. */
enum {
    IC_DL_INT = 0,
    IC_DL_UINT = 1,
    IC_DL_FLOAT = 2,
    IC_DL_OPAQUE = 3,
    IC_DL_BFLOAT = 4,
    IC_DL_COMPLEX = 5,
    IC_DL_BOOL = 6,
    IC_DL_FLOAT8_FIRST = 7,
    IC_DL_FLOAT8_LAST = 14,
    IC_DL_FLOAT6_FIRST = 15,
    IC_DL_FLOAT6_LAST = 16,
    IC_DL_FLOAT4 = 17,
    IC_DL_CODE_LAST = 17,
};

/* Device types by number, for the same reason (kDLTrn = 18 is newer than DLPack 1.1). */
enum {
    IC_DL_CPU = 1,
    IC_DL_CUDA = 2,
    IC_DL_CUDA_HOST = 3,
    IC_DL_ROCM = 10,
    IC_DL_ROCM_HOST = 11,
    IC_DL_CUDA_MANAGED = 13,
    IC_DL_DEVICE_LAST = 18,
};

/* ---------------------------------------------------------------------------------------
 * Tensor-level rules
 */

static bool ic_dlpack_device_known(int32_t type)
{
    return (type >= 1 && type <= 4) || (type >= 7 && type <= IC_DL_DEVICE_LAST);
}


/* The capsule's device against the one the producer names elsewhere (`named`: its
 * __dlpack_device__, or the dl_device asked for). Another device type, or another id of a
 * device, may send a consumer to the wrong memory: dlpack.device_match. Only another id of
 * host memory, where DLPack fixes the id at 0, cannot: all of it is one address space, so the
 * disagreement breaks dlpack.device (a consumer comparing devices is misled, none misreads). */
static void ic_dlpack_check_device_match(DLDevice device, int64_t type, int64_t id,
                                         const char *named, struct ic_diag *diag)
{
    if ((int64_t)device.device_type == type && (int64_t)device.device_id == id)
        return;
    bool host_id_only = ic_device_same_memory(device.device_type, device.device_id,
                                              (int32_t)type, id);
    ic_diag_error(diag, host_id_only ? IC_RULE_DLPACK_DEVICE : IC_RULE_DLPACK_DEVICE_MATCH,
                  "the capsule's device (%d, %d) differs from %s(%lld, %lld)%s",
                  (int)device.device_type, (int)device.device_id, named, (long long)type,
                  (long long)id,
                  host_id_only ? ": host memory, whose device_id DLPack fixes at 0" : "");
}

static const char *ic_dlpack_code_name(uint8_t code)
{
    static const char *const names[] = {"int",
                                        "uint",
                                        "float",
                                        "opaque handle",
                                        "bfloat",
                                        "complex",
                                        "bool",
                                        "float8_e3m4",
                                        "float8_e4m3",
                                        "float8_e4m3b11fnuz",
                                        "float8_e4m3fn",
                                        "float8_e4m3fnuz",
                                        "float8_e5m2",
                                        "float8_e5m2fnuz",
                                        "float8_e8m0fnu",
                                        "float6_e2m3fn",
                                        "float6_e3m2fn",
                                        "float4_e2m1fn"};
    return code <= IC_DL_CODE_LAST ? names[code] : "unknown";
}

/* Rule 2.5.18. Returns false when the type is illegal, so that no view is built on it. */
static bool ic_dlpack_check_dtype(DLDataType dtype, struct ic_diag *diag)
{
    enum ic_rule rule = IC_RULE_DLPACK_DTYPE;
    const char *name = ic_dlpack_code_name(dtype.code);
    unsigned bits = dtype.bits;
    bool ok = true;

    if (dtype.lanes == 0) {
        ic_diag_error(diag, rule, "dtype lanes 0: lanes must be >= 1");
        ok = false;
    } else if (dtype.lanes != 1) {
        ic_diag_warn(diag, rule,
                     "dtype lanes %u: vector types (lanes > 1) are legal DLPack but no Python "
                     "array library exchanges them",
                     (unsigned)dtype.lanes);
    }
    if (bits == 0) {
        ic_diag_error(diag, rule, "dtype (code %u, bits 0): bits must be > 0",
                      (unsigned)dtype.code);
        return false;
    }
    switch (dtype.code) {
    case IC_DL_INT:
    case IC_DL_UINT:
        if (bits != 4 && bits != 8 && bits != 16 && bits != 32 && bits != 64)
            ic_diag_warn(diag, rule,
                         "%s with %u bits: legal for compilers, but Python array libraries only "
                         "exchange 4, 8, 16, 32 and 64 bits",
                         name, bits);
        break;
    case IC_DL_FLOAT:
        if (bits != 16 && bits != 32 && bits != 64) {
            ic_diag_error(diag, rule,
                          "float with %u bits: kDLFloat is IEEE binary16/32/64 (16, 32 or 64 "
                          "bits)",
                          bits);
            ok = false;
        }
        break;
    case IC_DL_OPAQUE:
        break; /* any size, by agreement between the two frameworks */
    case IC_DL_BFLOAT:
        if (bits != 16) {
            ic_diag_error(diag, rule, "bfloat with %u bits: kDLBfloat must have 16 bits", bits);
            ok = false;
        }
        break;
    case IC_DL_COMPLEX:
        if (bits != 64 && bits != 128) {
            ic_diag_error(diag, rule,
                          "complex with %u bits: kDLComplex bits count the whole number and "
                          "must be 64 or 128",
                          bits);
            ok = false;
        }
        break;
    case IC_DL_BOOL:
        if (bits != 8) {
            ic_diag_error(diag, rule,
                          "bool with %u bits: kDLBool must have 8 bits (one storage byte per "
                          "element)",
                          bits);
            ok = false;
        }
        break;
    default:
        if (dtype.code >= IC_DL_FLOAT8_FIRST && dtype.code <= IC_DL_FLOAT8_LAST) {
            if (bits != 8) {
                ic_diag_error(diag, rule, "%s with %u bits: FP8 types must have 8 bits", name,
                              bits);
                ok = false;
            }
        } else if (dtype.code >= IC_DL_FLOAT6_FIRST && dtype.code <= IC_DL_FLOAT6_LAST) {
            if (bits != 6) {
                ic_diag_error(diag, rule,
                              "%s with %u bits: FP6 types must have 6 bits and consumers must "
                              "refuse other values",
                              name, bits);
                ok = false;
            }
        } else if (dtype.code == IC_DL_FLOAT4) {
            if (bits != 4) {
                ic_diag_error(diag, rule,
                              "%s with %u bits: FP4 must have 4 bits and consumers must refuse "
                              "other values",
                              name, bits);
                ok = false;
            }
        } else {
            ic_diag_error(diag, rule, "dtype code %u is not a DLPack type code (0-%d)",
                          (unsigned)dtype.code, IC_DL_CODE_LAST);
            ok = false;
        }
        break;
    }
    return ok;
}

/* Rule 2.5.19; the device only decides where the data is, never whether a view exists. */
static void ic_dlpack_check_device(DLDevice device, struct ic_diag *diag)
{
    enum ic_rule rule = IC_RULE_DLPACK_DEVICE;
    int32_t type = (int32_t)device.device_type;

    if (!ic_dlpack_device_known(type))
        ic_diag_error(diag, rule, "device type %d is not a DLPack device type (1-4, 7-%d)",
                      (int)type, IC_DL_DEVICE_LAST);
    if (device.device_id < 0)
        ic_diag_error(diag, rule, "device_id %d: must be >= 0", (int)device.device_id);
    else if (device.device_id != 0 && ic_device_type_is_host(type))
        ic_diag_warn(diag, rule,
                     "device_id %d on device type %d: DLPack sets device_id to 0 for CPU, "
                     "pinned and managed memory",
                     (int)device.device_id, (int)type);
}

/* Alignment a host compiler gives the element type: complex aligns as its parts. */
static int64_t ic_dlpack_natural_alignment(enum ic_dtype dtype, int64_t itemsize)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    if (!info)
        return 1;
    return info->value_class == IC_VALUE_COMPLEX ? itemsize / 2 : itemsize;
}

/* Memory a tensor's elements may be read in by the host. */
static bool ic_dlpack_host_memory(int32_t device_type)
{
    return device_type == IC_DL_CPU || device_type == IC_DL_CUDA_HOST ||
           device_type == IC_DL_ROCM_HOST;
}

/* Copies `count` int64 entries of the producer's array `what` (shape, strides) into `out`.
 * False, with the finding written, when they cannot be read. */
static bool ic_dlpack_copy_extents(const int64_t *array, int count, const char *what, int64_t *out,
                                   struct ic_diag *diag, bool *ret_unreadable)
{
    return ic_export_copy_entries(out, array, count, sizeof(int64_t), what,
                                  IC_RULE_DLPACK_SHAPE_STRIDES, diag, ret_unreadable);
}

/* What the steps of ic_dlpack_check_tensor_guarded share: the tensor, the view being built,
 * and the sizes worked out on the way. A step that returns bool returns false, with its
 * finding written, when no view can be built. */
struct ic_dlpack_tensor_check {
    const DLTensor *tensor;
    const struct ic_dlpack_header *header;
    struct ic_diag *diag;
    bool *ret_unreadable;
    struct ic_view view;
    unsigned elem_bits;
    bool subbyte, padded, have_strides;
    int64_t shape[IC_MAX_NDIM], strides[IC_MAX_NDIM]; /* copies of the producer's arrays */
    int64_t numel, itemsize, nbytes, lo, hi;
    uintptr_t first; /* the address of the first element */
    enum ic_dtype dtype;
};

/* The element width, and whether the sub-byte padding flag means anything for it. */
static void ic_dlpack_check_subbyte_flag(struct ic_dlpack_tensor_check *tc)
{
    const struct ic_dlpack_header *header = tc->header;

    tc->elem_bits = (unsigned)tc->tensor->dtype.bits * (unsigned)tc->tensor->dtype.lanes;
    tc->subbyte = tc->elem_bits % 8 != 0;
    tc->padded = header->versioned && (header->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    if (tc->padded && tc->elem_bits >= 8 && !tc->subbyte)
        ic_diag_warn(tc->diag, IC_RULE_DLPACK_SUBBYTE,
                     "flags set DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED for a %u-bit type: the "
                     "flag only means something for sub-byte types",
                     tc->elem_bits);
}

/* ndim, then the shape and strides arrays it says are there, copied out of the producer's
 * memory. */
static bool ic_dlpack_read_extents(struct ic_dlpack_tensor_check *tc)
{
    const DLTensor *tensor = tc->tensor;
    const struct ic_dlpack_header *header = tc->header;
    int32_t ndim = tensor->ndim;

    if (ndim < 0 || ndim > IC_MAX_NDIM) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_NDIM, "ndim %d: ndim must be between 0 and %d",
                      (int)ndim, IC_MAX_NDIM);
        return false;
    }
    /* From here shape and strides may be read, but only for ndim > 0 (rule 2.5.13). */
    if (ndim > 0 && !tensor->shape) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE_STRIDES,
                      "ndim %d with shape NULL: shape must hold ndim entries", (int)ndim);
        return false;
    }
    if (ndim > 0 && !tensor->strides && header->versioned &&
        (header->major > 1 || (header->major == 1 && header->minor >= 2)))
        ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE_STRIDES,
                      "ndim %d with strides NULL in a version %u.%u capsule: DLPack >= 1.2 "
                      "requires strides when ndim != 0",
                      (int)ndim, (unsigned)header->major, (unsigned)header->minor);

    if (ndim > 0 && !ic_dlpack_copy_extents(tensor->shape, ndim, "shape", tc->shape, tc->diag,
                                            tc->ret_unreadable))
        return false;
    tc->have_strides = ndim > 0 && tensor->strides;
    if (tc->have_strides && !ic_dlpack_copy_extents(tensor->strides, ndim, "strides", tc->strides,
                                                    tc->diag, tc->ret_unreadable))
        return false;
    return true;
}

/* The extents and their element count; every bad extent is reported. */
static bool ic_dlpack_check_shape(struct ic_dlpack_tensor_check *tc)
{
    struct ic_view *view = &tc->view;
    int32_t ndim = tc->tensor->ndim;
    bool shape_ok = true;
    char text[96];

    view->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        view->shape[i] = tc->shape[i];
        if (tc->shape[i] < 0) {
            ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE, "shape[%d] is %lld: extents must be >= 0",
                          i, (long long)tc->shape[i]);
            shape_ok = false;
        }
    }
    if (shape_ok && ic_view_numel(view, &tc->numel) < 0) {
        ic_view_format_shape(view, text, sizeof(text));
        ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE,
                      "the element count of shape %s overflows int64", text);
        shape_ok = false;
    }
    return shape_ok;
}

/* Sizes: a packed sub-byte tensor is counted in bits (rule 2.5.21, §8.5); anything else
 * in whole bytes per element. */
static bool ic_dlpack_check_size(struct ic_dlpack_tensor_check *tc)
{
    tc->itemsize = (tc->elem_bits + 7) / 8;
    if (tc->subbyte && !tc->padded) {
        int64_t nbits;
        if (__builtin_mul_overflow(tc->numel, (int64_t)tc->elem_bits, &nbits)) {
            ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE,
                          "%lld elements of %u bits: the size in bits overflows int64",
                          (long long)tc->numel, tc->elem_bits);
            return false;
        }
        tc->nbytes = nbits / 8 + (nbits % 8 != 0);
    } else if (__builtin_mul_overflow(tc->numel, tc->itemsize, &tc->nbytes)) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE,
                      "%lld elements of %lld bytes: the size in bytes overflows int64",
                      (long long)tc->numel, (long long)tc->itemsize);
        return false;
    }
    tc->view.itemsize = (int)tc->itemsize;
    return true;
}

/* Element strides become byte strides (or C-contiguous ones when there are none), and the
 * bytes they address must fit in int64. */
static bool ic_dlpack_check_strides(struct ic_dlpack_tensor_check *tc)
{
    struct ic_view *view = &tc->view;
    char text[96];

    if (tc->have_strides) {
        for (int i = 0; i < view->ndim; i++) {
            if (__builtin_mul_overflow(tc->strides[i], tc->itemsize, &view->strides[i])) {
                ic_diag_error(tc->diag, IC_RULE_DLPACK_STRIDES,
                              "strides[%d] = %lld elements of %lld bytes: the byte stride "
                              "overflows int64",
                              i, (long long)tc->strides[i], (long long)tc->itemsize);
                return false;
            }
        }
    } else if (ic_view_set_c_strides(view) < 0) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_SHAPE,
                      "the C-contiguous strides of this shape overflow int64");
        return false;
    }
    if (ic_view_span(view, &tc->lo, &tc->hi) < 0) {
        ic_view_format_strides(view, text, sizeof(text));
        ic_diag_error(tc->diag, IC_RULE_DLPACK_STRIDES,
                      "the bytes addressed through strides %s overflow int64", text);
        return false;
    }
    return true;
}

/* data + byte_offset is the first element; it and the span around it must be addresses. */
static bool ic_dlpack_check_address(struct ic_dlpack_tensor_check *tc)
{
    const DLTensor *tensor = tc->tensor;
    int64_t lo = tc->lo, hi = tc->hi;

    if (tc->numel > 0 && !tensor->data) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_DATA,
                      "data is NULL for %lld elements: only an empty tensor may have no data",
                      (long long)tc->numel);
        return false;
    }
    uintptr_t base = (uintptr_t)tensor->data;
    if (tensor->byte_offset > UINTPTR_MAX - base) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_ADDRESS,
                      "data %p + byte_offset %llu wraps around the address space", tensor->data,
                      (unsigned long long)tensor->byte_offset);
        return false;
    }
    uintptr_t first = base + (uintptr_t)tensor->byte_offset;
    if (tc->numel > 0 &&
        ((lo < 0 && (uintptr_t)(-lo) > first) || (hi > 0 && (uintptr_t)hi > UINTPTR_MAX - first))) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_ADDRESS,
                      "the elements at %#llx + [%lld, %lld) wrap around the address space",
                      (unsigned long long)first, (long long)lo, (long long)hi);
        return false;
    }
    tc->first = first;
    return true;
}

/* A misaligned first element is legal but costly, so it is a warning only. */
static void ic_dlpack_check_alignment(struct ic_dlpack_tensor_check *tc)
{
    const DLDataType dl = tc->tensor->dtype;

    tc->dtype = IC_DTYPE_INVALID;
    if (ic_dtype_from_dlpack(dl.code, dl.bits, dl.lanes, &tc->dtype) < 0)
        tc->dtype = IC_DTYPE_INVALID;
    int64_t alignment = ic_dlpack_natural_alignment(tc->dtype, tc->itemsize);
    if (tc->numel > 0 && alignment > 1 && tc->first % (uintptr_t)alignment != 0)
        ic_diag_warn(tc->diag, IC_RULE_DLPACK_ADDRESS,
                     "the first element at %#llx is not aligned to %lld bytes (the element's "
                     "natural alignment); consumers may copy or fault",
                     (unsigned long long)tc->first, (long long)alignment);
}

/* Fills in the rest of the view and, for host memory, checks every element can be read. */
static bool ic_dlpack_finish_view(struct ic_dlpack_tensor_check *tc)
{
    const struct ic_dlpack_header *header = tc->header;
    struct ic_view *view = &tc->view;

    view->data = tc->first;
    view->dtype = tc->dtype;
    view->readonly = header->versioned && (header->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
    view->readonly_known = header->versioned;
    if (!ic_dlpack_host_memory(view->device_type))
        return true;
    /* Every element must be there before anyone reads one (a byte_offset far past the
     * allocation, data the producer already freed): judged now, on the host. */
    char why[200];
    int rc = ic_view_check_readable(view, why, sizeof(why));
    if (rc == IC_EFAULT) {
        ic_diag_error(tc->diag, IC_RULE_DLPACK_ADDRESS, "data %p + byte_offset %llu: %s",
                      tc->tensor->data, (unsigned long long)tc->tensor->byte_offset, why);
        *tc->ret_unreadable = true;
        return false;
    }
    if (rc < 0)
        ic_diag_warn(tc->diag, IC_RULE_DLPACK_ADDRESS, "%s", why);
    return true;
}

/* ic_dlpack_check_tensor, also saying whether the tensor points at unreadable memory. */
static int ic_dlpack_check_tensor_guarded(const DLTensor *tensor,
                                          const struct ic_dlpack_header *header,
                                          struct ic_diag *diag, struct ic_view *ret_view,
                                          bool *ret_have_view, bool *ret_unreadable)
{
    struct ic_dlpack_tensor_check tc;

    *ret_have_view = false;
    memset(&tc, 0, sizeof(tc));
    tc.tensor = tensor;
    tc.header = header;
    tc.diag = diag;
    tc.ret_unreadable = ret_unreadable;
    tc.view.device_type = (int32_t)tensor->device.device_type;
    tc.view.device_id = tensor->device.device_id;

    ic_dlpack_check_device(tensor->device, diag);
    bool describable = ic_dlpack_check_dtype(tensor->dtype, diag);
    ic_dlpack_check_subbyte_flag(&tc);
    if (!ic_dlpack_read_extents(&tc))
        return 0;
    /* Shape findings are reported even when the dtype already rules out a view. */
    if (!ic_dlpack_check_shape(&tc) || !describable)
        return 0;
    if (!ic_dlpack_check_size(&tc) || !ic_dlpack_check_strides(&tc) ||
        !ic_dlpack_check_address(&tc))
        return 0;
    ic_dlpack_check_alignment(&tc);
    if (tc.subbyte && !tc.padded) {
        /* Element strides of packed 4/6-bit data have no byte equivalent (§8.5). */
        ic_diag_warn(diag, IC_RULE_DLPACK_SUBBYTE,
                     "%s elements of %u bits are packed: the tester cannot describe them with "
                     "byte strides",
                     ic_dlpack_code_name(tensor->dtype.code), tc.elem_bits);
        return 0;
    }
    if (!ic_dlpack_finish_view(&tc))
        return 0;
    *ret_view = tc.view;
    *ret_have_view = true;
    return 0;
}

int ic_dlpack_check_tensor(const DLTensor *tensor, const struct ic_dlpack_header *header,
                           struct ic_diag *diag, struct ic_view *ret_view, bool *ret_have_view)
{
    bool unreadable = false;
    if (!tensor || !header || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    return ic_dlpack_check_tensor_guarded(tensor, header, diag, ret_view, ret_have_view,
                                          &unreadable);
}

/* ---------------------------------------------------------------------------------------
 * Capsule-level rules
 */

/* Reads a capsule's name through the guard into `buf`. 0 with the name; IC_ENOTFOUND for a
 * capsule without one; IC_EFAULT when it cannot be read (buf then holds what could be). A name
 * longer than buf is truncated: it is none of DLPack's names anyway. */
static int ic_dlpack_capsule_name(PyObject *capsule, char *buf, size_t size, const char **ret_raw)
{
    const char *name = PyCapsule_GetName(capsule); /* reads the object, not the string */
    *ret_raw = name;
    buf[0] = '\0';
    if (!name) {
        PyErr_Clear();
        return IC_ENOTFOUND;
    }
    int rc = ic_guard_string((uintptr_t)name, buf, size);
    return rc == IC_ERANGE ? 0 : rc;
}

/* Copies the managed struct the capsule points at into info (header and tensor), through the
 * guard. Sets usable once the deleter can be reached, readable once the tensor is copied. */
static void ic_dlpack_copy_struct(void *pointer, struct ic_dlpack_capsule *info,
                                  struct ic_diag *diag)
{
    const char *kind = info->header.versioned ? "DLManagedTensorVersioned" : "DLManagedTensor";
    int rc;
    if (info->header.versioned) {
        DLManagedTensorVersioned managed;
        /* Up to flags first: a struct of another major version may end there. */
        rc = ic_guard_copy(&managed, (uintptr_t)pointer,
                           offsetof(DLManagedTensorVersioned, dl_tensor));
        if (rc < 0)
            goto unreadable;
        info->usable = true;
        info->header.major = managed.version.major;
        info->header.minor = managed.version.minor;
        info->header.flags = managed.flags;
        if (managed.version.major != 1) {
            ic_diag_error(diag, IC_RULE_DLPACK_MAJOR_VERSION,
                          "version %u.%u: a consumer of DLPack 1.x must call the deleter and "
                          "read nothing else from a struct of another major version",
                          (unsigned)managed.version.major, (unsigned)managed.version.minor);
            return;
        }
        uint64_t unknown = managed.flags & ~(uint64_t)IC_DLPACK_KNOWN_FLAGS;
        if (unknown)
            ic_diag_warn(diag, IC_RULE_DLPACK_FLAG_BITS,
                         "flags 0x%llx set undefined bits 0x%llx (DLPack %d.%d defines bits 0-2 "
                         "only)",
                         (unsigned long long)managed.flags, (unsigned long long)unknown,
                         DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
        rc = ic_guard_copy(&info->tensor,
                           (uintptr_t)pointer + offsetof(DLManagedTensorVersioned, dl_tensor),
                           sizeof(DLTensor));
        if (rc < 0)
            goto unreadable;
    } else {
        DLManagedTensor managed;
        rc = ic_guard_copy(&managed, (uintptr_t)pointer, sizeof(managed));
        if (rc < 0)
            goto unreadable;
        info->usable = true;
        info->tensor = managed.dl_tensor;
    }
    info->readable = true;
    return;

unreadable:
    if (rc == IC_EFAULT) {
        ic_diag_error(diag, IC_RULE_DLPACK_MANAGED_TENSOR,
                      "the capsule points at %p, where no %s can be read: the memory is not "
                      "mapped readable",
                      pointer, kind);
        info->unreadable = true;
    } else {
        ic_diag_warn(diag, IC_RULE_DLPACK_MANAGED_TENSOR, "the %s at %p could not be read: %s",
                     kind, pointer, ic_strerror(rc));
    }
    memset(&info->tensor, 0, sizeof(info->tensor));
}

int ic_dlpack_check_capsule(PyObject *capsule, struct ic_dlpack_capsule *ret_info,
                            struct ic_diag *diag, struct ic_view *ret_view, bool *ret_have_view)
{
    struct ic_dlpack_capsule info;
    enum ic_rule rule = IC_RULE_DLPACK_CAPSULE_NAME;
    char name[64];
    const char *raw_name = NULL;

    if (!capsule || !ret_info || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    memset(&info, 0, sizeof(info));
    *ret_have_view = false;

    if (!PyCapsule_CheckExact(capsule)) {
        ic_diag_error(diag, rule, "the export is a %s, not a PyCapsule", Py_TYPE(capsule)->tp_name);
        goto done;
    }
    int rc = ic_dlpack_capsule_name(capsule, name, sizeof(name), &raw_name);
    if (rc == IC_ENOTFOUND) {
        ic_diag_error(diag, rule,
                      "the capsule has no name: it must be named \"" IC_DLPACK_NAME_LEGACY
                      "\" or \"" IC_DLPACK_NAME_VERSIONED "\"");
        goto done;
    }
    if (rc == IC_EFAULT) {
        ic_diag_error(diag, IC_RULE_DLPACK_MANAGED_TENSOR,
                      "the capsule's name at %p cannot be read (\"%s\" before the memory ends): "
                      "every consumer reads it",
                      (const void *)raw_name, name);
        info.unreadable = true;
        goto done;
    }
    if (rc < 0) {
        ic_diag_warn(diag, rule, "the capsule's name at %p could not be read: %s",
                     (const void *)raw_name, ic_strerror(rc));
        goto done;
    }
    if (strcmp(name, IC_DLPACK_NAME_VERSIONED) == 0) {
        info.header.versioned = true;
    } else if (strcmp(name, IC_DLPACK_NAME_LEGACY) == 0) {
        info.header.versioned = false;
    } else if (strcmp(name, IC_DLPACK_NAME_USED_LEGACY) == 0 ||
               strcmp(name, IC_DLPACK_NAME_USED_VERSIONED) == 0) {
        info.used = true;
        ic_diag_error(diag, rule,
                      "the capsule is named \"%s\": it was consumed already, and a consumer must "
                      "reject it without calling the deleter",
                      name);
        goto done;
    } else {
        ic_diag_error(diag, rule,
                      "capsule name \"%s\" is none of \"" IC_DLPACK_NAME_LEGACY
                      "\", \"" IC_DLPACK_NAME_VERSIONED "\"",
                      name);
        goto done;
    }
    /* Rule 2.5.7: a static name lies inside a loaded module's image; a heap string (freed
     * with its producer's object while the capsule still points at it) does not. */
    if (!ic_in_loaded_image(raw_name))
        ic_diag_warn(diag, IC_RULE_DLPACK_STATIC_NAME,
                     "the capsule name \"%s\" at %p lies outside every loaded module: it looks "
                     "allocated, but capsule names must be static strings",
                     name, (const void *)raw_name);
    /* The name was just read whole, so CPython's own compare of it reads mapped memory. */
    void *pointer = PyCapsule_GetPointer(capsule, raw_name);
    if (!pointer) {
        /* Python never makes a capsule of NULL; a broken capsule object could still get here */
        PyErr_Clear();
        ic_diag_error(diag, rule, "PyCapsule_GetPointer(capsule, \"%s\") is NULL", name);
        goto done;
    }
    info.managed = pointer;
    ic_dlpack_copy_struct(pointer, &info, diag);
    if (info.readable) {
        bool unreadable = false;
        ic_dlpack_check_tensor_guarded(&info.tensor, &info.header, diag, ret_view, ret_have_view,
                                       &unreadable);
        info.unreadable = unreadable;
    }

done:
    *ret_info = info;
    return 0;
}

void ic_dlpack_describe(const struct ic_dlpack_capsule *info, char *buf, size_t size)
{
    if (!info->usable)
        snprintf(buf, size, "%s", info->used ? "consumed capsule" : "unusable export");
    else if (info->header.versioned)
        snprintf(buf, size, IC_DLPACK_NAME_VERSIONED " %u.%u flags=0x%llx",
                 (unsigned)info->header.major, (unsigned)info->header.minor,
                 (unsigned long long)info->header.flags);
    else
        snprintf(buf, size, IC_DLPACK_NAME_LEGACY);
}

/* ---------------------------------------------------------------------------------------
 * The deleter watch
 */

struct ic_watch_entry {
    struct ic_watch_head head; /* id, calls, released: the holder gave the id up */
    void *managed;
    bool versioned;
    bool superseded; /* a newer struct lives at this address: lookups by address skip it */
    bool consumed;
    bool forwarded;
    bool held; /* interopcheck's consumer holds the tensor (ic_dlpack_watch_hold) */
    int early_calls;
    void (*legacy_deleter)(DLManagedTensor *);
    void (*versioned_deleter)(DLManagedTensorVersioned *);
};

static struct ic_watch_table ic_deleters = IC_WATCH_TABLE_INIT(struct ic_watch_entry);

/* Depth of calls into the producer's code on this thread (ic_dlpack_producer_call_begin), and
 * whether automatic garbage collection was on when the outermost one began. */
static _Thread_local int ic_producer_depth;
static _Thread_local bool ic_producer_gc_was_enabled;

static bool ic_watch_is_at(const void *entry, const void *managed)
{
    const struct ic_watch_entry *watched = entry;
    return !watched->superseded && watched->managed == managed;
}

/* Callers hold the lock. */
static struct ic_watch_entry *ic_watch_by_address(const void *managed)
{
    return ic_watch_find(&ic_deleters, ic_watch_is_at, managed);
}

static struct ic_watch_entry *ic_watch_entry(int id)
{
    return ic_watch_by_id(&ic_deleters, id);
}

/* The counting deleter: counts, and forwards the first call only. Runs on any thread,
 * never touches Python, and calls the producer's deleter without holding the lock (that
 * deleter may take the GIL, whose holder may be waiting for this lock). */
static void ic_watch_deleter_called(void *managed)
{
    void (*legacy)(DLManagedTensor *) = NULL;
    void (*versioned)(DLManagedTensorVersioned *) = NULL;

    ic_watch_lock(&ic_deleters);
    struct ic_watch_entry *entry = ic_watch_by_address(managed);
    if (!entry) {
        ic_watch_note_unmatched(&ic_deleters);
    } else if (entry->held || (ic_producer_depth > 0 && entry->consumed)) {
        /* The producer frees what a consumer still reads: held back, so that the memory
         * stays valid until the consumer's own call, which is forwarded. */
        entry->early_calls++;
    } else {
        entry->head.calls++;
        if (entry->head.calls == 1) {
            legacy = entry->legacy_deleter;
            versioned = entry->versioned_deleter;
            entry->forwarded = legacy || versioned;
        }
        if (entry->head.released)
            ic_watch_retire(&ic_deleters, entry);
    }
    ic_watch_unlock(&ic_deleters);
    if (versioned)
        versioned((DLManagedTensorVersioned *)managed);
    else if (legacy)
        legacy((DLManagedTensor *)managed);
}

static void ic_watch_deleter_legacy(DLManagedTensor *managed)
{
    ic_watch_deleter_called(managed);
}

static void ic_watch_deleter_versioned(DLManagedTensorVersioned *managed)
{
    ic_watch_deleter_called(managed);
}

int ic_dlpack_watch(void *managed, bool versioned, int *ret_id)
{
    void (*legacy_deleter)(DLManagedTensor *) = NULL;
    void (*versioned_deleter)(DLManagedTensorVersioned *) = NULL;
    void (*legacy_ours)(DLManagedTensor *) = ic_watch_deleter_legacy;
    void (*versioned_ours)(DLManagedTensorVersioned *) = ic_watch_deleter_versioned;
    int rc = 0;

    if (!managed || !ret_id)
        return IC_EINVAL;
    /* The field is the producer's memory: read and replaced through the guard. */
    uintptr_t field = (uintptr_t)managed + (versioned ? offsetof(DLManagedTensorVersioned, deleter)
                                                      : offsetof(DLManagedTensor, deleter));
    void *current = versioned ? (void *)&versioned_deleter : (void *)&legacy_deleter;
    const void *ours = versioned ? (const void *)&versioned_ours : (const void *)&legacy_ours;
    size_t field_size = versioned ? sizeof(versioned_deleter) : sizeof(legacy_deleter);

    ic_watch_lock(&ic_deleters);
    rc = ic_guard_copy(current, field, field_size);
    if (rc < 0)
        goto unlock;
    bool instrumented = versioned ? versioned_deleter == ic_watch_deleter_versioned
                                  : legacy_deleter == ic_watch_deleter_legacy;
    struct ic_watch_entry *existing = ic_watch_by_address(managed);
    if (instrumented) {
        if (existing)
            *ret_id = existing->head.id;
        else
            rc = IC_ENOTFOUND; /* the original deleter is no longer known */
        goto unlock;
    }
    /* A struct that cannot be written (read-only memory) keeps its deleter: not watched. */
    rc = ic_guard_store(field, current, field_size);
    if (rc < 0)
        goto unlock;
    /* A struct at a watched address that is not instrumented is a new struct where a freed
     * one lived: the old entry keeps its counts but no longer matches the address. */
    if (existing)
        existing->superseded = true;

    struct ic_watch_entry *slot = ic_watch_add(&ic_deleters);
    if (!slot) {
        rc = IC_ENOMEM;
        goto unlock;
    }
    slot->managed = managed;
    slot->versioned = versioned;
    slot->versioned_deleter = versioned_deleter;
    slot->legacy_deleter = legacy_deleter;
    rc = ic_guard_store(field, ours, field_size);
    if (rc < 0) {
        ic_watch_retire(&ic_deleters, slot);
        goto unlock;
    }
    *ret_id = slot->head.id;

unlock:
    ic_watch_unlock(&ic_deleters);
    return rc;
}

int ic_dlpack_watch_state(int id, struct ic_dlpack_watch_state *ret)
{
    struct ic_watch_entry entry;
    int rc = ic_watch_copy(&ic_deleters, id, &entry);
    if (rc < 0)
        return rc;
    ret->versioned = entry.versioned;
    ret->had_deleter =
        entry.versioned ? entry.versioned_deleter != NULL : entry.legacy_deleter != NULL;
    ret->forwarded = entry.forwarded;
    ret->consumed = entry.consumed;
    ret->calls = entry.head.calls;
    ret->early_calls = entry.early_calls;
    return 0;
}

void ic_dlpack_watch_mark_consumed(int id)
{
    ic_watch_lock(&ic_deleters);
    struct ic_watch_entry *entry = ic_watch_entry(id);
    if (entry)
        entry->consumed = true;
    ic_watch_unlock(&ic_deleters);
}

void ic_dlpack_watch_hold(int id, bool held)
{
    ic_watch_lock(&ic_deleters);
    struct ic_watch_entry *entry = ic_watch_entry(id);
    if (entry)
        entry->held = held;
    ic_watch_unlock(&ic_deleters);
}

void ic_dlpack_producer_call_begin(void)
{
    if (ic_producer_depth++ == 0)
        ic_producer_gc_was_enabled = PyGC_Disable() == 1;
}

void ic_dlpack_producer_call_end(void)
{
    if (ic_producer_depth > 0 && --ic_producer_depth == 0 && ic_producer_gc_was_enabled)
        PyGC_Enable();
}

int ic_dlpack_watch_find(const void *managed, const int *ids, int count)
{
    int found = -1;
    ic_watch_lock(&ic_deleters);
    for (int i = count - 1; i >= 0 && found < 0; i--) {
        struct ic_watch_entry *entry = ic_watch_entry(ids[i]);
        if (entry && entry->managed == managed)
            found = entry->head.id;
    }
    ic_watch_unlock(&ic_deleters);
    return found;
}

void ic_dlpack_watch_release(int id)
{
    ic_watch_done(&ic_deleters, id);
}

int ic_dlpack_watch_unmatched(void)
{
    return ic_watch_unmatched(&ic_deleters);
}

/* ---------------------------------------------------------------------------------------
 * The consumer's request and what the export must be for it (§2.3, rules 2.5.4, 8, 9, 11)
 */

struct ic_dlpack_request {
    bool max_version_given; /* present and not None */
    bool max_version_valid; /* ... and a 2-tuple of ints */
    int64_t max_major, max_minor;
    bool dl_device_given;
    bool dl_device_valid;
    int64_t dl_device_type, dl_device_id;
    int copy; /* -1: absent or None, 0: False, 1: True */
    bool stream_given;
    bool stream_is_int;
    int64_t stream;
};

/* A device as __dlpack_device__ reported it. */
struct ic_dlpack_device {
    bool valid;
    int64_t type, id;
};

static bool ic_dlpack_int_pair(PyObject *obj, int64_t *first, int64_t *second)
{
    if (!obj || !PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2)
        return false;
    return ic_export_int64(PyTuple_GET_ITEM(obj, 0), first, NULL) == 0 &&
           ic_export_int64(PyTuple_GET_ITEM(obj, 1), second, NULL) == 0;
}

static void ic_dlpack_parse_request(PyObject *kwargs, struct ic_dlpack_request *req)
{
    memset(req, 0, sizeof(*req));
    req->copy = -1;
    if (!kwargs || !PyDict_Check(kwargs))
        return;
    PyObject *max_version = PyDict_GetItemString(kwargs, "max_version"); /* borrowed */
    PyObject *dl_device = PyDict_GetItemString(kwargs, "dl_device");
    PyObject *copy = PyDict_GetItemString(kwargs, "copy");
    PyObject *stream = PyDict_GetItemString(kwargs, "stream");

    if (max_version && max_version != Py_None) {
        req->max_version_given = true;
        req->max_version_valid = ic_dlpack_int_pair(max_version, &req->max_major, &req->max_minor);
    }
    if (dl_device && dl_device != Py_None) {
        req->dl_device_given = true;
        req->dl_device_valid =
            ic_dlpack_int_pair(dl_device, &req->dl_device_type, &req->dl_device_id);
    }
    if (copy && copy != Py_None) {
        int truth = PyObject_IsTrue(copy);
        if (truth < 0)
            PyErr_Clear();
        else
            req->copy = truth;
    }
    if (stream && stream != Py_None) {
        req->stream_given = true;
        req->stream_is_int = ic_export_int64(stream, &req->stream, NULL) == 0;
    }
}

/* Rule 2.5.8: __dlpack_device__() returns a 2-tuple of ints (an IntEnum is an int). */
static bool ic_dlpack_check_device_result(PyObject *result, struct ic_diag *diag,
                                          struct ic_dlpack_device *ret)
{
    char text[96];
    enum ic_rule rule = IC_RULE_DLPACK_DEVICE_TUPLE;

    memset(ret, 0, sizeof(*ret));
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2) {
        ic_py_repr(result, text, sizeof(text));
        ic_diag_error(diag, rule,
                      "__dlpack_device__() returned %s (a %s): it must return a 2-tuple "
                      "(device_type, device_id)",
                      text, Py_TYPE(result)->tp_name);
        return false;
    }
    int64_t values[2];
    for (int i = 0; i < 2; i++) {
        PyObject *item = PyTuple_GET_ITEM(result, i); /* borrowed */
        int rc = ic_export_int64(item, &values[i], NULL);
        if (rc < 0) {
            ic_py_repr(item, text, sizeof(text));
            ic_diag_error(diag, rule, "__dlpack_device__()[%d] is %s (a %s): %s", i, text,
                          Py_TYPE(item)->tp_name,
                          rc == IC_ERANGE ? "it does not fit in int64" : "it must be an int");
            return false;
        }
    }
    ret->valid = true;
    ret->type = values[0];
    ret->id = values[1];
    return true;
}

static void ic_dlpack_format_stream(const struct ic_dlpack_request *req, char *buf, size_t size)
{
    if (req->stream_is_int)
        snprintf(buf, size, "%lld", (long long)req->stream);
    else
        snprintf(buf, size, "<not an int in int64 range>");
}

/* Checks an export against the request it answered. `reported` may be NULL or invalid. */
static void ic_dlpack_check_request(const struct ic_dlpack_request *req,
                                    const struct ic_dlpack_capsule *info,
                                    const struct ic_dlpack_device *reported, struct ic_diag *diag)
{
    const struct ic_dlpack_header *header = &info->header;
    char text[32];

    if (!info->usable)
        return;
    if (!req->max_version_given && header->versioned)
        ic_diag_error(
            diag, IC_RULE_DLPACK_LEGACY_REQUEST,
            "a versioned capsule (DLPack %u.%u) answered a request without "
            "max_version: such a consumer only understands the legacy \"" IC_DLPACK_NAME_LEGACY
            "\" capsule (or a BufferError)",
            (unsigned)header->major, (unsigned)header->minor);
    if (req->max_version_valid) {
        if (!header->versioned && req->max_major >= 1)
            ic_diag_warn(diag, IC_RULE_DLPACK_PREFER_VERSIONED,
                         "a legacy \"" IC_DLPACK_NAME_LEGACY
                         "\" capsule although max_version=(%lld, %lld) allows DLPack 1.x: the "
                         "producer may lack DLPack 1.x support",
                         (long long)req->max_major, (long long)req->max_minor);
        if (header->versioned && (int64_t)header->major > req->max_major)
            ic_diag_error(diag, IC_RULE_DLPACK_MAX_VERSION,
                          "version %u.%u exceeds the requested max_version=(%lld, %lld): the "
                          "major version must not be greater",
                          (unsigned)header->major, (unsigned)header->minor,
                          (long long)req->max_major, (long long)req->max_minor);
    }

    bool copied = header->versioned && (header->flags & DLPACK_FLAG_BITMASK_IS_COPIED);
    if (req->copy == 1 && !header->versioned)
        ic_diag_error(diag, IC_RULE_DLPACK_COPY_FLAG,
                      "copy=True, but a legacy capsule cannot carry "
                      "DLPACK_FLAG_BITMASK_IS_COPIED");
    else if (req->copy == 1 && !copied)
        ic_diag_error(diag, IC_RULE_DLPACK_COPY_FLAG,
                      "copy=True, but flags 0x%llx lack DLPACK_FLAG_BITMASK_IS_COPIED (0x2): a "
                      "producer that copies must say so",
                      (unsigned long long)header->flags);
    else if (req->copy == 0 && copied)
        ic_diag_error(diag, IC_RULE_DLPACK_NO_COPY,
                      "copy=False, but flags 0x%llx set DLPACK_FLAG_BITMASK_IS_COPIED: the "
                      "producer copied although copying was forbidden",
                      (unsigned long long)header->flags);

    if (!info->readable)
        return;
    DLDevice device = info->tensor.device;
    if (req->dl_device_given && !req->dl_device_valid) {
        /* The consumer's malformed request: nothing to compare against. */
    } else if (req->dl_device_valid) {
        ic_dlpack_check_device_match(device, req->dl_device_type, req->dl_device_id,
                                     "the requested dl_device=", diag);
    } else if (reported && reported->valid) {
        ic_dlpack_check_device_match(device, reported->type, reported->id,
                                     "__dlpack_device__() = ", diag);
    }
    if (req->stream_given) {
        /* CUDA streams order work on device and managed memory alike; ROCm's are ints too. */
        int32_t type = (int32_t)device.device_type;
        bool cuda = type == IC_DL_CUDA || type == IC_DL_CUDA_MANAGED;
        ic_dlpack_format_stream(req, text, sizeof(text));
        if (type == IC_DL_CPU)
            ic_diag_error(diag, IC_RULE_DLPACK_CPU_STREAM,
                          "stream=%s was passed for a CPU array and the producer exported anyway: "
                          "CPU producers must raise for any stream but None",
                          text);
        else if (!req->stream_is_int && (cuda || type == IC_DL_ROCM))
            ic_diag_error(diag, IC_RULE_DLPACK_STREAM_VALUE,
                          "stream=%s was accepted on device type %d: a CUDA or ROCm stream is "
                          "an int >= -1 (a reserved value or a handle); anything else must "
                          "raise",
                          text, (int)type);
        else if (req->stream_is_int && req->stream < -1)
            ic_diag_error(diag, IC_RULE_DLPACK_STREAM_VALUE,
                          "stream=%s was accepted: stream values below -1 are invalid", text);
        else if (req->stream_is_int && req->stream == 0 && cuda)
            ic_diag_warn(diag, IC_RULE_DLPACK_STREAM_VALUE,
                         "stream=0 was accepted on CUDA (device type %d): 0 is disallowed "
                         "(ambiguous) and should raise",
                         (int)type);
    }
}

/* Validates one export, instruments its deleter and records it. `req` is NULL for a bare
 * capsule (no request to answer). Returns the watch id through ret_watch (-1 when none). */
static void ic_dlpack_after_export(PyObject *capsule, const struct ic_dlpack_request *req,
                                   const struct ic_dlpack_device *reported,
                                   struct ic_export_record *rec, struct ic_dlpack_capsule *ret_info,
                                   int *ret_watch)
{
    struct ic_diag diag;
    struct ic_view view;
    struct ic_dlpack_capsule info;
    bool have_view = false;
    char detail[96];
    int capacity = (int)(sizeof(rec->watch) / sizeof(rec->watch[0]));

    ic_diag_init(&diag);
    memset(&view, 0, sizeof(view));
    *ret_watch = -1;
    ic_dlpack_check_capsule(capsule, &info, &diag, &view, &have_view);
    if (req) {
        ic_dlpack_check_request(req, &info, reported, &diag);
        if (req->copy == 1)
            rec->copy_expected = true;
        if (req->copy == 0)
            rec->no_copy_required = true;
    }
    if (info.usable) {
        bool copied = info.header.versioned && (info.header.flags & DLPACK_FLAG_BITMASK_IS_COPIED);
        rec->copy_flagged = rec->copy_flagged || copied;
        /* A versioned capsule would say it copied; a CPU producer's legacy capsule shares. */
        rec->zero_copy_known = true;
        if (!info.header.versioned)
            ic_diag_warn(&diag, IC_RULE_DLPACK_COPY_FLAG,
                         "a legacy capsule cannot say whether the producer copied: the export is "
                         "assumed to share the producer's memory");

        int id = -1;
        int rc = ic_dlpack_watch(info.managed, info.header.versioned, &id);
        if (rc < 0) {
            ic_diag_warn(&diag, IC_RULE_DLPACK_DELETER_ONCE,
                         "the deleter could not be instrumented (%s): its calls are not counted",
                         ic_strerror(rc));
        } else {
            bool listed = false;
            for (int i = 0; i < rec->watch_count; i++)
                listed = listed || rec->watch[i] == id;
            if (!listed && rec->watch_count < capacity) {
                rec->watch[rec->watch_count++] = id;
            } else if (!listed) {
                ic_diag_warn(&diag, IC_RULE_DLPACK_DELETER_ONCE,
                             "more than %d exports in one case: the deleter of this one is "
                             "instrumented but not checked",
                             capacity);
                ic_dlpack_watch_release(id);
            }
            *ret_watch = id;
        }
    }
    ic_dlpack_describe(&info, detail, sizeof(detail));
    if (have_view && !rec->have_view)
        rec->byte_offset = info.tensor.byte_offset;
    ic_export_record(rec, &view, have_view, &diag, detail);
    *ret_info = info;
}

/* ---------------------------------------------------------------------------------------
 * The proxy
 */

/* Marks the watch entry of `capsule` consumed once a consumer renamed it, so that a deleter
 * call from the producer's code that follows is seen as early. Reads only the name. */
static void ic_dlpack_note_taken(PyObject *capsule, struct ic_export_record *rec)
{
    char name[64];
    const char *raw_name;
    if (!capsule || !rec || !PyCapsule_CheckExact(capsule))
        return;
    if (ic_dlpack_capsule_name(capsule, name, sizeof(name), &raw_name) < 0)
        return;
    if (strcmp(name, IC_DLPACK_NAME_USED_LEGACY) != 0 &&
        strcmp(name, IC_DLPACK_NAME_USED_VERSIONED) != 0)
        return;
    void *managed = PyCapsule_GetPointer(capsule, raw_name);
    if (!managed) {
        PyErr_Clear();
        return;
    }
    int id = ic_dlpack_watch_find(managed, rec->watch, rec->watch_count);
    if (id >= 0)
        ic_dlpack_watch_mark_consumed(id);
}

/* Calls the producer's method `name` with the deleter watch told that the producer's code
 * runs. New reference, or NULL with the producer's exception set. */
static PyObject *ic_dlpack_call_producer(PyObject *target, const char *name, PyObject *args,
                                         PyObject *kwargs)
{
    PyObject *result = NULL;
    ic_dlpack_producer_call_begin();
    PyObject *method = PyObject_GetAttrString(target, name);
    if (method)
        result = args ? PyObject_Call(method, args, kwargs) : PyObject_CallNoArgs(method);
    ic_dlpack_producer_call_end();
    Py_XDECREF(method);
    return result;
}

/* The legacy_only and versioned_only variants: the proxy answers as a producer of another
 * era would, before the real producer is asked. True, with the exception set, when it
 * refused: a producer that predates max_version rejects the keywords DLPack 1.0 added
 * (max_version, dl_device, copy; stream is older) with TypeError, and the consumer is to
 * retry without them; one that has dropped legacy capsules refuses a request without
 * max_version with BufferError (allowed since DLPack's 2025 revision). */
static bool ic_dlpack_proxy_plays_old(const struct ic_export_record *rec, PyObject *kwargs,
                                      bool asks_max_version)
{
    static const char *const newer[] = {"max_version", "dl_device", "copy"};
    for (size_t i = 0; rec->variant == IC_VARIANT_DL_LEGACY_ONLY && kwargs &&
                       PyDict_Check(kwargs) && i < sizeof(newer) / sizeof(newer[0]);
         i++) {
        if (PyDict_GetItemString(kwargs, newer[i])) {
            PyErr_Format(PyExc_TypeError,
                         "__dlpack__() got an unexpected keyword argument '%s'", newer[i]);
            return true;
        }
    }
    if (rec->variant == IC_VARIANT_DL_VERSIONED_ONLY && !asks_max_version) {
        PyErr_SetString(PyExc_BufferError,
                        "this producer exports versioned capsules only: ask with max_version");
        return true;
    }
    return false;
}

/* Whether the producer's exception is the spec's signal of a producer older than the keywords
 * asked with: a TypeError that names a keyword (Python's "unexpected keyword argument", or the
 * keyword itself). A TypeError of another meaning (pyarrow's ArrowTypeError for a dtype DLPack
 * cannot carry) is a refusal, after which a consumer has nothing to retry. */
static bool ic_dlpack_keyword_refusal(const struct ic_py_exc *exc)
{
    return exc->type_error &&
           (strstr(exc->message, "keyword") || strstr(exc->message, "max_version"));
}

/* Whether a __dlpack__ call passed copy or dl_device with a value other than None: what the
 * consumer's own user asked for, which a retry without keywords would drop. */
static bool ic_dlpack_passes_user_keywords(PyObject *kwargs)
{
    static const char *const names[] = {"copy", "dl_device"};
    if (!kwargs || !PyDict_Check(kwargs))
        return false;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        PyObject *value = PyDict_GetItemString(kwargs, names[i]); /* borrowed */
        if (value && value != Py_None)
            return true;
    }
    return false;
}

/* The used_capsule variant: the proxy hands the consumer the producer's valid capsule, checked
 * as the producer made it, renamed used_* as if another consumer had taken it already; the
 * proxy then stands for that consumer and calls the deleter at finish if nobody did. */
static void ic_dlpack_proxy_forges(PyObject *capsule, const struct ic_dlpack_capsule *info,
                                   struct ic_export_record *rec)
{
    if (rec->variant != IC_VARIANT_DL_USED_CAPSULE || !info->usable || info->used)
        return;
    const char *used =
        info->header.versioned ? IC_DLPACK_NAME_USED_VERSIONED : IC_DLPACK_NAME_USED_LEGACY;
    if (PyCapsule_SetName(capsule, used) < 0) {
        PyErr_Clear();
        return;
    }
    rec->consumer_refusal_required = true;
    rec->consumer_refusal_rule = IC_RULE_DLPACK_CONSUMER_USED_CAPSULE;
    snprintf(rec->consumer_refusal_why, sizeof(rec->consumer_refusal_why),
             "a capsule named %s (renamed by the tester, as if consumed already)", used);
}

/* used_capsule: the tester stands for the consumer that used the capsule, so it calls the
 * deleter once the case is over, unless the consumer under test (wrongly) did. */
static void ic_dlpack_release_forged_use(PyObject *capsule, struct ic_export_record *rec)
{
    const char *name =
        capsule && PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    void *managed = name ? PyCapsule_GetPointer(capsule, name) : NULL;
    struct ic_dlpack_watch_state state;
    PyErr_Clear();
    int id = managed ? ic_dlpack_watch_find(managed, rec->watch, rec->watch_count) : -1;
    if (id < 0 || ic_dlpack_watch_state(id, &state) < 0 || state.calls > 0)
        return;
    /* each struct's deleter called through its own type */
    if (strcmp(name, IC_DLPACK_NAME_USED_VERSIONED) == 0) {
        DLManagedTensorVersioned copy;
        if (ic_guard_copy(&copy, (uintptr_t)managed, sizeof(copy)) < 0 || !copy.deleter)
            return;
        ic_dlpack_watch_mark_consumed(id);
        copy.deleter(managed);
    } else {
        DLManagedTensor copy;
        if (ic_guard_copy(&copy, (uintptr_t)managed, sizeof(copy)) < 0 || !copy.deleter)
            return;
        ic_dlpack_watch_mark_consumed(id);
        copy.deleter(managed);
    }
}

static PyObject *ic_dlpack_proxy_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    PyObject *capsule = NULL, *device = NULL;
    struct ic_py_exc exc;

    bool asks_max_version =
        kwargs && PyDict_Check(kwargs) && PyDict_GetItemString(kwargs, "max_version") != NULL;
    if (rec) {
        rec->export_calls++;
        ic_export_format_call("__dlpack__", args, kwargs, rec->request, sizeof(rec->request));
        if (asks_max_version)
            rec->dl_max_version_asked = true;
        else if (rec->dl_max_version_refused)
            rec->dl_retried = true;
        ic_dlpack_note_taken(proxy->last_export, rec);
    }
    if (rec && ic_dlpack_proxy_plays_old(rec, kwargs, asks_max_version)) {
        if (ic_py_peek(&exc)) {
            ic_export_producer_raised(rec, &exc);
            rec->dl_max_version_refused = asks_max_version && ic_dlpack_keyword_refusal(&exc);
        }
        return NULL;
    }
    struct ic_dlpack_request req;
    struct ic_dlpack_device reported = {0};
    ic_dlpack_parse_request(kwargs, &req);
    if (rec && !req.dl_device_valid) {
        /* The device the producer claims, to compare with the capsule (rule 2.5.8); its own
         * findings were recorded when the consumer asked. Asked first, as consumers do: the
         * producer's code then runs while the previous export is watched, not the new one. */
        struct ic_diag ignored;
        device = ic_dlpack_call_producer(proxy->target, "__dlpack_device__", NULL, NULL);
        ic_diag_init(&ignored);
        if (device)
            ic_dlpack_check_device_result(device, &ignored, &reported);
        else
            PyErr_Clear();
    }
    capsule = ic_dlpack_call_producer(proxy->target, "__dlpack__", args, kwargs);
    if (!capsule) {
        if (rec && ic_py_peek(&exc)) {
            ic_export_producer_raised(rec, &exc);
            if (asks_max_version && ic_dlpack_keyword_refusal(&exc)) {
                rec->dl_max_version_refused = true;
                rec->dl_refused_with_user_keywords = ic_dlpack_passes_user_keywords(kwargs);
                if (rec->variant == IC_VARIANT_DL_VERSIONED_ONLY)
                    snprintf(rec->unplayable, sizeof(rec->unplayable),
                             "the producer predates max_version (%s: %s): it cannot play a "
                             "producer of versioned capsules only",
                             exc.type, exc.message);
            }
        }
        goto cleanup; /* the producer's exception goes on to the consumer unchanged */
    }
    bool withheld = false;
    if (rec) {
        struct ic_dlpack_capsule info;
        int watch;
        ic_dlpack_after_export(capsule, &req, &reported, rec, &info, &watch);
        withheld = info.unreadable;
        if (!withheld)
            ic_dlpack_proxy_forges(capsule, &info, rec);
    }
    /* Kept until finish(), so that an untaken capsule's destructor runs before the deleter
     * counts are read; a withheld one is only ever ours. */
    Py_XSETREF(proxy->last_export, Py_NewRef(capsule));
    if (withheld) {
        /* Any consumer would read memory that is not there: the export's findings say so,
         * and the consumer gets the refusal a producer should have given. */
        Py_CLEAR(capsule);
        PyErr_SetString(PyExc_BufferError,
                        "interopcheck withheld this DLPack export from the consumer: it points "
                        "at memory that cannot be read");
    }

cleanup:
    Py_XDECREF(device);
    return capsule;
}

static PyObject *ic_dlpack_proxy_device(PyObject *self, PyObject *args, PyObject *kwargs)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    PyObject *result = NULL;
    struct ic_py_exc exc;

    if (rec)
        ic_dlpack_note_taken(proxy->last_export, rec);
    result = ic_dlpack_call_producer(proxy->target, "__dlpack_device__", args, kwargs);
    if (!result) {
        if (rec && ic_py_peek(&exc))
            ic_export_producer_raised(rec, &exc);
        return NULL;
    }
    if (rec) {
        struct ic_diag diag;
        struct ic_dlpack_device device;
        ic_diag_init(&diag);
        ic_dlpack_check_device_result(result, &diag, &device);
        ic_export_diag_merge(&rec->diag, &diag);
    }
    return result;
}

static PyMethodDef ic_dlpack_proxy_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))ic_dlpack_proxy_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "Forwards to the producer's __dlpack__ and validates the capsule."},
    {"__dlpack_device__", (PyCFunction)(void (*)(void))ic_dlpack_proxy_device,
     METH_VARARGS | METH_KEYWORDS, "Forwards to the producer's __dlpack_device__."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot ic_dlpack_proxy_slots[] = {
    {Py_tp_methods, ic_dlpack_proxy_methods},
    {0, NULL},
};

IC_PROXY_KIND(ic_dlpack, "interopcheck.DLPackProxy",
              "Offers __dlpack__ and __dlpack_device__ of a producer.", ic_dlpack_proxy_slots)

/* ---------------------------------------------------------------------------------------
 * observe / finish
 */

static void ic_dlpack_observe_capsule(PyObject *capsule, struct ic_export_record *rec)
{
    char name[64];
    const char *raw_name;
    if (!capsule || !PyCapsule_CheckExact(capsule))
        return;
    /* The consumer may have renamed it to a string of its own: read through the guard. */
    int rc = ic_dlpack_capsule_name(capsule, name, sizeof(name), &raw_name);
    if (rc == IC_EFAULT)
        ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_CONSUMER_RENAME,
                      "the capsule's name now points at %p, which cannot be read: a consumer "
                      "renames it to a static \"" IC_DLPACK_NAME_USED_LEGACY
                      "\" or \"" IC_DLPACK_NAME_USED_VERSIONED "\"",
                      (const void *)raw_name);
    if (rc < 0)
        return;
    bool used_legacy = strcmp(name, IC_DLPACK_NAME_USED_LEGACY) == 0;
    bool used_versioned = strcmp(name, IC_DLPACK_NAME_USED_VERSIONED) == 0;
    if (!used_legacy && !used_versioned) {
        if (strcmp(name, IC_DLPACK_NAME_LEGACY) != 0 && strcmp(name, IC_DLPACK_NAME_VERSIONED) != 0)
            ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_CONSUMER_RENAME,
                          "the capsule is now named \"%s\": a consumer takes ownership by renaming "
                          "it to \"" IC_DLPACK_NAME_USED_LEGACY
                          "\" or \"" IC_DLPACK_NAME_USED_VERSIONED "\"",
                          name);
        return;
    }
    rec->consumed = true;
    void *managed = PyCapsule_GetPointer(capsule, raw_name);
    if (!managed) {
        PyErr_Clear();
        return;
    }
    int id = ic_dlpack_watch_find(managed, rec->watch, rec->watch_count);
    struct ic_dlpack_watch_state state;
    if (id < 0 || ic_dlpack_watch_state(id, &state) < 0)
        return;
    ic_dlpack_watch_mark_consumed(id);
    if (state.versioned != used_versioned)
        ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_CONSUMER_RENAME,
                      "the consumer renamed a capsule holding a %s to \"%s\"",
                      state.versioned ? "DLManagedTensorVersioned" : "DLManagedTensor", name);
}

/* How a library consumer asked, judged once it returned: it must offer max_version (so that a
 * producer may answer with a versioned capsule), and fall back to a call without it when the
 * producer is too old for the keyword. */
static void ic_dlpack_observe_requests(struct ic_export_record *rec)
{
    if (rec->export_calls == 0)
        return;
    if (!rec->dl_max_version_asked)
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_CONSUMER_MAX_VERSION,
                      "the consumer called %s: without max_version a producer may only answer "
                      "with a legacy capsule",
                      rec->request);
    else if (rec->dl_max_version_refused && !rec->dl_retried && rec->dl_refused_with_user_keywords)
        ic_diag_warn(&rec->diag, IC_RULE_DLPACK_CONSUMER_RETRY,
                     "the producer refused max_version with TypeError (%s: %s); the consumer "
                     "did not call __dlpack__() again without it, which would have dropped the "
                     "copy or dl_device its caller asked for: raising is its choice",
                     rec->producer_exc_type, rec->producer_exc_message);
    else if (rec->dl_max_version_refused && !rec->dl_retried)
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_CONSUMER_RETRY,
                      "the producer refused max_version with TypeError (%s: %s) and the consumer "
                      "did not call __dlpack__() again without it",
                      rec->producer_exc_type, rec->producer_exc_message);
}

static void ic_dlpack_observe(PyObject *obj, struct ic_export_record *rec)
{
    if (!obj || !rec)
        return;
    if (ic_dlpack_is_proxy(obj)) {
        ic_dlpack_observe_capsule(((struct ic_proxy *)obj)->last_export, rec);
        ic_dlpack_observe_requests(rec);
    } else {
        ic_dlpack_observe_capsule(obj, rec);
    }
}

static void ic_dlpack_finish(PyObject *obj, struct ic_export_record *rec)
{
    if (!rec)
        return;
    /* Let go of the last capsule, so that an unconsumed one is destroyed now and its
     * destructor's deleter call is counted below. */
    if (ic_dlpack_is_proxy(obj) && rec->consumer_refusal_required &&
        rec->consumer_refusal_rule == IC_RULE_DLPACK_CONSUMER_USED_CAPSULE)
        ic_dlpack_release_forged_use(((struct ic_proxy *)obj)->last_export, rec);
    if (ic_dlpack_is_proxy(obj))
        Py_CLEAR(((struct ic_proxy *)obj)->last_export);

    for (int i = 0; i < rec->watch_count; i++) {
        struct ic_dlpack_watch_state state;
        if (ic_dlpack_watch_state(rec->watch[i], &state) < 0)
            continue;
        int before = rec->lifetime.count;
        if (state.early_calls > 0)
            ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_DELETER_EARLY,
                          "export %d: the producer called the deleter %d time%s itself while "
                          "the consumer still held the tensor, freeing memory in use (the "
                          "tester held %s back until the consumer's own call)",
                          i + 1, state.early_calls, state.early_calls == 1 ? "" : "s",
                          state.early_calls == 1 ? "that call" : "those calls");
        if (state.consumed && state.calls == 0)
            ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_DELETER_ONCE,
                          "export %d was consumed (renamed to used_*) but its deleter was never "
                          "called: the consumer leaks the tensor",
                          i + 1);
        else if (state.consumed && state.calls > 1)
            ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_DELETER_ONCE,
                          "export %d: the deleter was called %d times after the capsule was "
                          "consumed; it must be called exactly once (only the first call reached "
                          "the producer)",
                          i + 1, state.calls);
        else if (!state.consumed && state.calls > 1)
            ic_diag_error(&rec->lifetime, IC_RULE_DLPACK_CAPSULE_DESTRUCTOR,
                          "export %d was not consumed, yet its deleter was called %d times: the "
                          "capsule destructor must call it exactly once (only the first call "
                          "reached the producer)",
                          i + 1, state.calls);
        else if (!state.consumed && state.calls == 0)
            ic_diag_warn(&rec->lifetime, IC_RULE_DLPACK_CAPSULE_DESTRUCTOR,
                         "export %d was not consumed and its deleter was never called: the "
                         "capsule is still alive, or the producer's capsule destructor frees the "
                         "tensor without the deleter",
                         i + 1);
        if (state.calls == 0 && rec->lifetime.count > before) {
            /* Not called yet: a full collection may still call it, so this verdict is open.
             * The watch outlives its release while the deleter may still come, so a second
             * look (ic_exchange's finish stage) sees it again; the other verdicts are final. */
            rec->lifetime.items[rec->lifetime.count - 1].provisional = true;
        }
        ic_dlpack_watch_release(rec->watch[i]);
    }
    rec->lifetime_checked = true;
}

/* ---------------------------------------------------------------------------------------
 * The reference consumer
 */

struct ic_dlpack_import {
    void *managed;
    int watch; /* the watch entry, -1 when the deleter is not instrumented */
    /* Read when the capsule is taken, never at release: a broken producer may have freed the
     * struct by then (a destructor that ignores the rename), and the instrumented deleter
     * only compares the address. */
    void (*legacy_deleter)(DLManagedTensor *);
    void (*versioned_deleter)(DLManagedTensorVersioned *);
};

/* The consumer letting go: one deleter call, through the instrumentation when present. */
static void ic_dlpack_import_release(void *context)
{
    struct ic_dlpack_import *import = context;
    if (import->watch >= 0)
        ic_dlpack_watch_hold(import->watch, false); /* this call is the consumer's own */
    if (import->versioned_deleter)
        import->versioned_deleter(import->managed);
    else if (import->legacy_deleter)
        import->legacy_deleter(import->managed);
    free(import);
}

/* Takes ownership like from_dlpack: rename, then hold the tensor in a handle. */
static int ic_dlpack_take(PyObject *capsule, const struct ic_dlpack_capsule *info, int watch,
                          struct ic_export_record *rec, PyObject **ret_handle)
{
    struct ic_dlpack_import *import = malloc(sizeof(*import));

    if (!import)
        return IC_ENOMEM;
    import->managed = info->managed;
    import->watch = watch;
    import->legacy_deleter = NULL;
    import->versioned_deleter = NULL;
    /* The deleter as it is now (the instrumented one, when the watch took), read through the
     * guard like everything of the producer's struct. */
    int rc =
        info->header.versioned
            ? ic_guard_copy(&import->versioned_deleter,
                            (uintptr_t)info->managed + offsetof(DLManagedTensorVersioned, deleter),
                            sizeof(import->versioned_deleter))
            : ic_guard_copy(&import->legacy_deleter,
                            (uintptr_t)info->managed + offsetof(DLManagedTensor, deleter),
                            sizeof(import->legacy_deleter));
    if (rc < 0) {
        /* Readable when checked a moment ago; not taken, so its destructor stays in charge. */
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_MANAGED_TENSOR,
                      "the struct at %p could no longer be read when the capsule was taken",
                      info->managed);
        free(import);
        *ret_handle = Py_NewRef(capsule);
        return 0;
    }
    const char *used =
        info->header.versioned ? IC_DLPACK_NAME_USED_VERSIONED : IC_DLPACK_NAME_USED_LEGACY;
    if (PyCapsule_SetName(capsule, used) < 0) {
        PyErr_Clear();
        free(import);
        return IC_EPYTHON;
    }
    rec->consumed = true;
    if (watch >= 0) {
        ic_dlpack_watch_mark_consumed(watch);
        ic_dlpack_watch_hold(watch, true);
    }
    /* Renamed already: the deleter is ours to call (§2.3 ownership), through the handle's release
     * even when the handle cannot be made. */
    *ret_handle = ic_handle_new(import, ic_dlpack_import_release);
    return *ret_handle ? 0 : IC_ENOMEM;
}

/* The keywords of each variant's __dlpack__ call (a new dict), and what they demand. NULL
 * with an exception set when Python runs out of memory. */
static PyObject *ic_dlpack_variant_kwargs(struct ic_export_record *rec)
{
    PyObject *kwargs = NULL, *version = NULL, *extra = NULL;
    const char *extra_key = NULL;
    int major = DLPACK_MAJOR_VERSION, minor = DLPACK_MINOR_VERSION;
    bool ok = false;

    kwargs = PyDict_New();
    if (!kwargs)
        goto cleanup;
    if (rec->variant == IC_VARIANT_DL_LEGACY) {
        ok = true; /* an old consumer passes nothing */
        goto cleanup;
    }
    /* The negotiation edges (protocols.md §2.3): a major below, at and above every producer's,
     * and a minor above any that exists. */
    static const struct {
        enum ic_variant variant;
        int major, minor;
    } asked[] = {
        {IC_VARIANT_DL_MAX_VERSION_2, 2, 0},
        {IC_VARIANT_DL_MAX_VERSION_0_8, 0, 8},
        {IC_VARIANT_DL_MAX_VERSION_1_0, 1, 0},
        {IC_VARIANT_DL_MAX_VERSION_1_99, 1, 99},
    };
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        if (rec->variant == asked[i].variant)
            major = asked[i].major, minor = asked[i].minor;
    }
    version = Py_BuildValue("(ii)", major, minor);
    if (!version || PyDict_SetItemString(kwargs, "max_version", version) < 0)
        goto cleanup;
    switch (rec->variant) {
    case IC_VARIANT_DL_COPY:
        rec->copy_expected = true;
        extra_key = "copy";
        extra = Py_NewRef(Py_True);
        break;
    case IC_VARIANT_DL_NO_COPY:
        rec->no_copy_required = true;
        extra_key = "copy";
        extra = Py_NewRef(Py_False);
        break;
    case IC_VARIANT_DL_CPU_STREAM:
        rec->refusal_required = true; /* any exception is the conformant answer */
        extra_key = "stream";
        extra = PyLong_FromLong(1);
        break;
    case IC_VARIANT_DL_DEVICE_CPU:
        extra_key = "dl_device";
        extra = Py_BuildValue("(ii)", (int)kDLCPU, 0);
        break;
    default:
        /* A GPU case names the stream the driver will read on (ic_exchange presets it). */
        if (rec->has_stream) {
            extra_key = "stream";
            extra = PyLong_FromLongLong(rec->stream);
        }
        break;
    }
    if (extra_key && (!extra || PyDict_SetItemString(kwargs, extra_key, extra) < 0))
        goto cleanup;
    ok = true;

cleanup:
    Py_XDECREF(version);
    Py_XDECREF(extra);
    if (!ok)
        Py_CLEAR(kwargs);
    return kwargs;
}

/* What the variant demands of the capsule beyond the general request rules. */
static void ic_dlpack_check_variant(const struct ic_dlpack_capsule *info,
                                    struct ic_export_record *rec)
{
    if (!info->usable)
        return;
    if (rec->variant == IC_VARIANT_DL_LEGACY && info->header.versioned)
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_LEGACY_REQUEST,
                      "__dlpack__() without max_version returned a \"" IC_DLPACK_NAME_VERSIONED
                      "\" capsule: an old consumer needs \"" IC_DLPACK_NAME_LEGACY
                      "\" or a BufferError");
    if (rec->variant == IC_VARIANT_READONLY && !info->header.versioned)
        ic_diag_warn(&rec->diag, IC_RULE_DLPACK_READONLY_FLAG,
                     "a read-only array was exported as a legacy capsule, which cannot say it is "
                     "read-only: producers should raise BufferError instead");
}

static int ic_dlpack_consume_capsule(PyObject *capsule, const struct ic_dlpack_request *req,
                                     const struct ic_dlpack_device *reported,
                                     struct ic_export_record *rec, PyObject **ret_handle)
{
    struct ic_dlpack_capsule info;
    int watch = -1;

    ic_dlpack_after_export(capsule, req, reported, rec, &info, &watch);
    ic_dlpack_check_variant(&info, rec);
    if (info.readable)
        return ic_dlpack_take(capsule, &info, watch, rec, ret_handle);
    /* Rejected: not renamed, so dropping the handle lets the producer's capsule destructor
     * call the deleter (what NumPy does for a major version it does not know). */
    *ret_handle = Py_NewRef(capsule);
    return 0;
}

static int ic_dlpack_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                       PyObject **ret_handle)
{
    PyObject *device = NULL, *method = NULL, *kwargs = NULL, *capsule = NULL, *no_args = NULL;
    struct ic_py_exc exc;
    struct ic_dlpack_device reported = {0};
    struct ic_dlpack_request req;
    int rc = 0;

    *ret_handle = NULL;
    if (rec->variant == IC_VARIANT_DL_C_API)
        return ic_dlpack_c_api_consume(export_obj, rec, ret_handle);
    /* from_dlpack asks for the device first. */
    device = ic_dlpack_call_producer(export_obj, "__dlpack_device__", NULL, NULL);
    if (!device) {
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        goto cleanup;
    }
    {
        struct ic_diag diag;
        ic_diag_init(&diag);
        ic_dlpack_check_device_result(device, &diag, &reported);
        ic_export_diag_merge(&rec->diag, &diag);
    }
    kwargs = ic_dlpack_variant_kwargs(rec);
    no_args = PyTuple_New(0);
    if (!kwargs || !no_args) {
        PyErr_Clear();
        rc = IC_ENOMEM;
        goto cleanup;
    }
    method = PyObject_GetAttrString(export_obj, "__dlpack__");
    if (!method) {
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        goto cleanup;
    }
    rec->export_calls++;
    ic_export_format_call("__dlpack__", NULL, kwargs, rec->request, sizeof(rec->request));
    ic_dlpack_producer_call_begin();
    capsule = PyObject_Call(method, no_args, kwargs);
    ic_dlpack_producer_call_end();
    if (!capsule) {
        ic_py_fetch(&exc);
        bool plain = rec->variant == IC_VARIANT_NONE || rec->variant == IC_VARIANT_READONLY;
        if (plain && exc.type_error) {
            /* The spec's fallback for producers that predate max_version. */
            ic_diag_warn(&rec->diag, IC_RULE_DLPACK_PREFER_VERSIONED,
                         "the producer does not accept max_version (%s: %s); retried "
                         "__dlpack__() without arguments",
                         exc.type, exc.message);
            Py_CLEAR(kwargs);
            rec->export_calls++;
            ic_export_format_call("__dlpack__", NULL, NULL, rec->request, sizeof(rec->request));
            ic_dlpack_producer_call_begin();
            capsule = PyObject_Call(method, no_args, NULL);
            ic_dlpack_producer_call_end();
            if (!capsule)
                ic_py_fetch(&exc);
        }
        if (!capsule) {
            ic_export_producer_raised(rec, &exc);
            goto cleanup;
        }
    }
    ic_dlpack_parse_request(kwargs, &req);
    rc = ic_dlpack_consume_capsule(capsule, &req, &reported, rec, ret_handle);

cleanup:
    Py_XDECREF(device);
    Py_XDECREF(method);
    Py_XDECREF(kwargs);
    Py_XDECREF(capsule);
    Py_XDECREF(no_args);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * dlpack_capsule: a bare capsule, as a to_dlpack function returns it
 */

static void ic_dlpack_capsule_note_versioned(const struct ic_dlpack_capsule *info,
                                             struct ic_export_record *rec)
{
    if (info->usable && info->header.versioned)
        ic_diag_warn(&rec->diag, IC_RULE_DLPACK_PREFER_VERSIONED,
                     "the bare capsule is \"" IC_DLPACK_NAME_VERSIONED
                     "\": legal, but to_dlpack functions make \"" IC_DLPACK_NAME_LEGACY
                     "\" capsules and consumers that take capsules may expect one");
}

static int ic_dlpack_capsule_inspect(PyObject *capsule, struct ic_export_record *rec)
{
    struct ic_dlpack_capsule info;
    int watch;

    if (!capsule || !rec)
        return IC_EINVAL;
    rec->export_calls++;
    snprintf(rec->request, sizeof(rec->request), "capsule");
    ic_dlpack_after_export(capsule, NULL, NULL, rec, &info, &watch);
    ic_dlpack_capsule_note_versioned(&info, rec);
    return 0;
}

/* Validates, watches and takes the capsule; `to_dlpack` notes a versioned capsule from a
 * to_dlpack function (consumers of bare capsules may expect a legacy one). */
static int ic_dlpack_take(PyObject *capsule, const struct ic_dlpack_capsule *info, int watch,
                          struct ic_export_record *rec, PyObject **ret_handle);

static int ic_dlpack_take_as(PyObject *capsule, struct ic_export_record *rec, bool to_dlpack,
                             PyObject **ret_handle)
{
    struct ic_dlpack_capsule info;
    int watch = -1;

    *ret_handle = NULL;
    rec->export_calls++;
    snprintf(rec->request, sizeof(rec->request), "capsule");
    ic_dlpack_after_export(capsule, NULL, NULL, rec, &info, &watch);
    if (to_dlpack)
        ic_dlpack_capsule_note_versioned(&info, rec);
    if (info.readable)
        return ic_dlpack_take(capsule, &info, watch, rec, ret_handle);
    *ret_handle = Py_NewRef(capsule);
    return 0;
}

int ic_dlpack_take_capsule(PyObject *capsule, struct ic_export_record *rec, PyObject **ret_handle)
{
    return ic_dlpack_take_as(capsule, rec, false, ret_handle);
}

static int ic_dlpack_capsule_reference_consume(PyObject *capsule, struct ic_export_record *rec,
                                               PyObject **ret_handle)
{
    return ic_dlpack_take_as(capsule, rec, true, ret_handle);
}

/* A CPU array asked for a stream must refuse (rule dlpack.cpu_stream); a CUDA array asked for
 * stream=0 should. */
static void ic_dlpack_preset_refusal(struct ic_export_record *rec, const struct ic_view *produced,
                                     bool readonly_known)
{
    (void)readonly_known;
    if (rec->variant == IC_VARIANT_DL_CPU_STREAM) {
        rec->refusal_required = produced->device_type == IC_DEVICE_CPU;
        rec->refusal_rule = IC_RULE_DLPACK_CPU_STREAM;
    }
    /* stream=0 is disallowed on CUDA (it could mean None, 1 or 2), and no exception is named:
     * PyTorch's AssertionError refuses it as well as a ValueError would. */
    if (rec->variant == IC_VARIANT_DL_STREAM_ZERO)
        rec->refusal_expected = true;
}

/* The stream of each stream variant's request (protocols.md §2.6), and the stream the reads
 * happen on: the default streams are read on themselves; a plain request names none. */
static void ic_dlpack_request_stream(struct ic_export_record *rec, uintptr_t ours,
                                     uintptr_t *read_stream)
{
    rec->has_stream = true;
    switch (rec->variant) {
    case IC_VARIANT_DL_STREAM_LEGACY:
        rec->stream = 1;
        *read_stream = 1; /* CU_STREAM_LEGACY, a valid handle of the driver API */
        break;
    case IC_VARIANT_DL_STREAM_PER_THREAD:
        rec->stream = 2;
        *read_stream = 2; /* CU_STREAM_PER_THREAD */
        break;
    case IC_VARIANT_DL_STREAM_NO_SYNC:
        rec->stream = -1; /* ordering is the consumer's: it waits for the producer */
        break;
    case IC_VARIANT_DL_STREAM_ZERO:
        rec->stream = 0;
        *read_stream = 0;
        break;
    case IC_VARIANT_DL_STREAM_HANDLE:
    case IC_VARIANT_DL_STREAM_ORDER:
        rec->stream = (int64_t)ours;
        break;
    default:
        /* A plain request names no stream: None, the legacy default stream, is read on. */
        rec->has_stream = false;
        *read_stream = 0;
        break;
    }
}

/* A consumer that asked with max_version, received a legacy capsule (a 0.x producer's valid
 * answer) and failed in the capsule API looked the capsule up under the versioned name: its
 * own error names PyCapsule. */
static enum ic_rule ic_dlpack_consumer_error_cause(const struct ic_export_record *rec,
                                                   const char *exc_type, const char *exc_message,
                                                   char *why, size_t size)
{
    if (!ic_export_legacy_answer(rec) || !strstr(exc_message, "PyCapsule"))
        return IC_RULE_NONE;
    snprintf(why, size,
             "asked %s, received a legacy \"dltensor\" capsule (%s), and raised %s: %s: it did "
             "not read the capsule's name",
             rec->request, rec->detail, exc_type, exc_message);
    return IC_RULE_DLPACK_CONSUMER_CAPSULE_KIND;
}

/* What both DLPack protocols, __dlpack__ and bare capsules, tell the generic checks. */
#define IC_DLPACK_FACTS                                                                            \
    .advised_refusal_rule = IC_RULE_DLPACK_CONSUMER_REFUSAL,                                       \
    .no_copy_rule = IC_RULE_DLPACK_NO_COPY, .silent_copy_rule = IC_RULE_DLPACK_COPY_FLAG,          \
    .readonly_rule = IC_RULE_DLPACK_READONLY_FLAG, .memory_rule = IC_RULE_DLPACK_ADDRESS,          \
    .copy_rule = IC_RULE_DLPACK_COPY_TRUE, .device_pointer_rule = IC_RULE_DLPACK_DEVICE_POINTER,   \
    .stream_order_rule = IC_RULE_DLPACK_STREAM_ORDER, .consumer_asks_copy = true

const struct ic_protocol_ops ic_dlpack_ops = {
    .protocol = IC_PROTOCOL_DLPACK,
    .facts = {IC_DLPACK_FACTS, .stream_order_variant = IC_VARIANT_DL_STREAM_ORDER},
    .proxy_new = ic_dlpack_proxy_new,
    .reference_consume = ic_dlpack_reference_consume,
    .observe = ic_dlpack_observe,
    .finish = ic_dlpack_finish,
    .preset_refusal = ic_dlpack_preset_refusal,
    .request_stream = ic_dlpack_request_stream,
    .consumer_error_cause = ic_dlpack_consumer_error_cause,
};

const struct ic_protocol_ops ic_dlpack_capsule_ops = {
    .protocol = IC_PROTOCOL_DLPACK_CAPSULE,
    .facts = {IC_DLPACK_FACTS, .export_call_judged = true},
    .inspect = ic_dlpack_capsule_inspect,
    .reference_consume = ic_dlpack_capsule_reference_consume,
    .observe = ic_dlpack_observe,
    .finish = ic_dlpack_finish,
};
