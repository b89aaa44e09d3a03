#include "ic_array_struct.h"

#include <stdio.h>
#include <string.h>

#include "ic_array_interface.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_guard.h"
#include "ic_proxy.h"
#include "ic_python.h"

#define IC_AS_RULE IC_RULE_ARRAY_STRUCT_STRUCT

/* typekind and itemsize spelled as a typestr, so that one grammar judges both protocols. */
static int ic_as_parse_type(char typekind, int itemsize, struct ic_typestr *ret, char *why,
                            size_t why_size)
{
    char text[40];
    long long count = itemsize;
    if (typekind == 'U') {
        if (itemsize % 4 != 0) {
            snprintf(why, why_size, "a 'U' itemsize must be a multiple of 4 (UCS4)");
            return IC_EINVAL;
        }
        count = itemsize / 4;
    } else if (typekind == 't') {
        count = (long long)itemsize * 8;
    }
    if (typekind == '\0') {
        snprintf(why, why_size, "typekind is NUL");
        return IC_EINVAL;
    }
    snprintf(text, sizeof(text), "|%c%lld", typekind, count);
    return ic_typestr_parse(text, ret, why, why_size);
}

/* Copies `count` Py_ssize_t of the producer's array `what` through the guard. False, with the
 * finding, when they cannot be read. */
static bool ic_as_copy_array(const Py_ssize_t *array, int count, const char *what, Py_ssize_t *out,
                             struct ic_diag *diag)
{
    int rc = ic_guard_copy(out, (uintptr_t)array, (size_t)count * sizeof(Py_ssize_t));
    if (rc == IC_EFAULT)
        ic_diag_error(diag, IC_RULE_ARRAY_STRUCT_MEMORY,
                      "%s at %p cannot be read for its %d entries: the memory is not mapped "
                      "readable",
                      what, (const void *)array, count);
    else if (rc < 0)
        ic_diag_warn(diag, IC_RULE_ARRAY_STRUCT_MEMORY, "%s at %p could not be checked: %s", what,
                     (const void *)array, ic_strerror(rc));
    return rc == 0;
}

/* What the steps of ic_as_check_guarded share: the copy of the producer's struct, and the view
 * built from it step by step. */
struct ic_as_check {
    const struct ic_pyarrayinterface *inter; /* the copy: the producer's is never read again */
    struct ic_diag *diag;
    struct ic_view view;
    struct ic_typestr type;
    Py_ssize_t strides[IC_MAX_NDIM]; /* copied when have_strides */
    bool have_strides;
    int64_t numel;
    bool describable; /* false once a finding leaves no view to build */
};

/* The capsule itself: exactly a PyCapsule, and unnamed. *ret_name is the name to look the
 * pointer up with. False when the check stops here (the finding is written). */
static bool ic_as_check_capsule(PyObject *capsule, struct ic_diag *diag, const char **ret_name)
{
    if (!PyCapsule_CheckExact(capsule)) {
        ic_diag_error(diag, IC_AS_RULE,
                      "__array_struct__ is a %s: NumPy requires exactly a PyCapsule",
                      Py_TYPE(capsule)->tp_name);
        return false;
    }
    const char *name = PyCapsule_GetName(capsule);
    if (!name && PyErr_Occurred())
        PyErr_Clear();
    if (name) {
        char name_text[64];
        if (ic_guard_string((uintptr_t)name, name_text, sizeof(name_text)) == IC_EFAULT) {
            ic_diag_error(diag, IC_RULE_ARRAY_STRUCT_MEMORY,
                          "the capsule's name at %p cannot be read", (const void *)name);
            return false; /* CPython's own pointer lookup would read it */
        }
        ic_diag_error(diag, IC_AS_RULE,
                      "the capsule is named \"%s\": NumPy looks the pointer up with a NULL name, "
                      "so it must be unnamed",
                      name_text);
    }
    *ret_name = name;
    return true;
}

/* Copies the PyArrayInterface the capsule points at into *ret_inter (zeroed when it cannot
 * be read). False when the check stops here. */
static bool ic_as_copy_struct(PyObject *capsule, const char *name, struct ic_diag *diag,
                              struct ic_pyarrayinterface *ret_inter)
{
    const struct ic_pyarrayinterface *pointer = PyCapsule_GetPointer(capsule, name);
    if (!pointer) {
        PyErr_Clear();
        ic_diag_error(diag, IC_AS_RULE, "the capsule's pointer is NULL");
        return false;
    }
    /* The struct is the producer's memory: copied once, and only the copy is read. */
    int rc = ic_guard_copy(ret_inter, (uintptr_t)pointer, sizeof(*ret_inter));
    if (rc < 0) {
        memset(ret_inter, 0, sizeof(*ret_inter));
        if (rc == IC_EFAULT)
            ic_diag_error(diag, IC_RULE_ARRAY_STRUCT_MEMORY,
                          "the capsule points at %p, where no PyArrayInterface can be read: the "
                          "memory is not mapped readable",
                          (const void *)pointer);
        else
            ic_diag_warn(diag, IC_RULE_ARRAY_STRUCT_MEMORY,
                         "the PyArrayInterface at %p could not be checked: %s",
                         (const void *)pointer, ic_strerror(rc));
        return false;
    }
    return true;
}

/* two and nd, which say whether the rest of the struct can be read at all. False when the
 * check stops here. */
static bool ic_as_check_two_nd(const struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;

    if (inter->two != 2) {
        ic_diag_error(check->diag, IC_AS_RULE, "two is %d: a PyArrayInterface has two == 2",
                      inter->two);
        return false;
    }
    if (inter->nd < 0 || inter->nd > IC_MAX_NDIM) {
        ic_diag_error(check->diag, IC_AS_RULE, "nd %d: it must be between 0 and %d", inter->nd,
                      IC_MAX_NDIM);
        return false;
    }
    return true;
}

/* typekind and itemsize, judged by the typestr grammar; the element type stays unknown when
 * they are not legal. */
static void ic_as_check_type(struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;
    char reason[96];

    if (ic_as_parse_type(inter->typekind, inter->itemsize, &check->type, reason, sizeof(reason)) <
        0) {
        ic_diag_error(check->diag, IC_AS_RULE, "typekind '%c' with itemsize %d: %s",
                      inter->typekind ? inter->typekind : '?', inter->itemsize, reason);
        check->describable = false;
        check->type.dtype = IC_DTYPE_INVALID;
        check->type.native = true;
    }
}

/* The byte order: elements of more than one byte declared byte-swapped have no native element
 * type. */
static void ic_as_check_byte_order(struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;
    int flags = inter->flags;
    bool order_free =
        inter->itemsize <= 1 || strchr("bSVOt", inter->typekind ? inter->typekind : 'x');

    if (!(flags & IC_ARR_NOTSWAPPED) && !order_free) {
        ic_diag_warn(check->diag, IC_AS_RULE,
                     "flags 0x%x lack NOTSWAPPED (0x200): the %d-byte '%c' elements are declared "
                     "byte-swapped, and NumPy reads them so",
                     flags, inter->itemsize, inter->typekind);
        check->type.dtype = IC_DTYPE_INVALID;
    }
}

/* descr is set exactly when the flags say ARR_HAS_DESCR. */
static void ic_as_check_descr(const struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;
    int flags = inter->flags;

    if ((flags & IC_ARR_HAS_DESCR) && !inter->descr)
        ic_diag_error(check->diag, IC_AS_RULE,
                      "flags 0x%x set ARR_HAS_DESCR (0x800) but descr is NULL", flags);
    else if (!(flags & IC_ARR_HAS_DESCR) && inter->descr)
        ic_diag_error(check->diag, IC_AS_RULE,
                      "descr is set but flags 0x%x lack ARR_HAS_DESCR (0x800): consumers ignore "
                      "the descr",
                      flags);
}

/* The shape and strides arrays, read through the guard, and the extents and element count
 * they give. False when there is no view to build. */
static bool ic_as_view_shape(struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;
    Py_ssize_t shape[IC_MAX_NDIM];
    char text[96];

    check->view.ndim = inter->nd;
    if (inter->nd > 0 && !inter->shape) {
        ic_diag_error(check->diag, IC_AS_RULE, "nd %d with shape NULL: shape must hold nd entries",
                      inter->nd);
        return false;
    }
    check->have_strides = inter->nd > 0 && inter->strides;
    if ((inter->nd > 0 &&
         !ic_as_copy_array(inter->shape, inter->nd, "shape", shape, check->diag)) ||
        (check->have_strides &&
         !ic_as_copy_array(inter->strides, inter->nd, "strides", check->strides, check->diag)))
        return false;
    for (int i = 0; i < inter->nd; i++) {
        check->view.shape[i] = shape[i];
        if (shape[i] < 0) {
            ic_diag_error(check->diag, IC_AS_RULE, "shape[%d] is %zd: extents must be >= 0", i,
                          shape[i]);
            check->describable = false;
        }
    }
    if (check->describable && ic_view_numel(&check->view, &check->numel) < 0) {
        ic_view_format_shape(&check->view, text, sizeof(text));
        ic_diag_error(check->diag, IC_AS_RULE, "the element count of shape %s overflows int64",
                      text);
        check->describable = false;
    }
    return check->describable;
}

/* The producer's strides, else C-contiguous ones, and the bytes they address: all within
 * int64. False when the check stops here. */
static bool ic_as_view_strides(struct ic_as_check *check)
{
    struct ic_view *view = &check->view;

    view->itemsize = check->inter->itemsize;
    if (check->have_strides) {
        for (int i = 0; i < check->inter->nd; i++)
            view->strides[i] = check->strides[i];
    }
    return ic_export_strides_fit(view, check->have_strides, check->numel, IC_AS_RULE, check->diag);
}

/* The contiguity flags against the strides. */
static void ic_as_check_contiguity_flags(const struct ic_as_check *check)
{
    int flags = check->inter->flags;
    bool c_contiguous = ic_view_is_c_contiguous(&check->view);
    bool f_contiguous = ic_view_is_f_contiguous(&check->view);
    char text[96];

    ic_view_format_strides(&check->view, text, sizeof(text));
    if ((flags & IC_ARR_C_CONTIGUOUS) && !c_contiguous)
        ic_diag_error(check->diag, IC_AS_RULE,
                      "flags 0x%x set C_CONTIGUOUS but strides %s are not C-contiguous", flags,
                      text);
    else if (!(flags & IC_ARR_C_CONTIGUOUS) && c_contiguous && check->numel > 1)
        ic_diag_warn(check->diag, IC_AS_RULE,
                     "strides %s are C-contiguous but flags 0x%x lack C_CONTIGUOUS: consumers "
                     "that trust the flags copy",
                     text, flags);
    if ((flags & IC_ARR_F_CONTIGUOUS) && !f_contiguous)
        ic_diag_error(check->diag, IC_AS_RULE,
                      "flags 0x%x set F_CONTIGUOUS but strides %s are not Fortran-contiguous",
                      flags, text);
}

/* The data pointer: non-NULL for any elements, and aligned when the flags say ALIGNED. False
 * when the check stops here. */
static bool ic_as_check_data_pointer(const struct ic_as_check *check)
{
    const struct ic_pyarrayinterface *inter = check->inter;
    int flags = inter->flags;

    if (check->numel > 0 && !inter->data) {
        ic_diag_error(check->diag, IC_AS_RULE, "data is NULL for %lld elements",
                      (long long)check->numel);
        return false;
    }
    const struct ic_dtype_info *info = ic_dtype_info(check->type.dtype);
    if (info && (flags & IC_ARR_ALIGNED) && check->numel > 0) {
        uintptr_t alignment = (uintptr_t)(info->value_class == IC_VALUE_COMPLEX ? info->itemsize / 2
                                                                                : info->itemsize);
        if ((uintptr_t)inter->data % alignment != 0)
            ic_diag_error(check->diag, IC_AS_RULE,
                          "flags 0x%x set ALIGNED but data %p is not aligned to %zu bytes", flags,
                          inter->data, (size_t)alignment);
    }
    return true;
}

/* The elements must be there before anyone reads one. False when they are not. */
static bool ic_as_check_data_readable(struct ic_as_check *check)
{
    char why[200];

    check->view.data = (uintptr_t)check->inter->data;
    int rc = ic_view_check_readable(&check->view, why, sizeof(why));
    if (rc == IC_EFAULT) {
        ic_diag_error(check->diag, IC_RULE_ARRAY_STRUCT_MEMORY, "data %p: %s", check->inter->data,
                      why);
        return false;
    }
    if (rc < 0)
        ic_diag_warn(check->diag, IC_RULE_ARRAY_STRUCT_MEMORY, "%s", why);
    return true;
}

/* ic_array_struct_check; *ret_inter is a copy of the struct (zeroed when it could not be
 * read, so `two` is then 0). */
static int ic_as_check_guarded(PyObject *capsule, struct ic_diag *diag, struct ic_view *ret_view,
                               bool *ret_have_view, struct ic_pyarrayinterface *ret_inter)
{
    struct ic_as_check check;
    const char *name = NULL;

    memset(ret_inter, 0, sizeof(*ret_inter));
    *ret_have_view = false;
    memset(&check, 0, sizeof(check));
    check.inter = ret_inter;
    check.diag = diag;
    check.view.device_type = IC_DEVICE_CPU;
    check.view.readonly_known = true;
    check.describable = true;

    if (!ic_as_check_capsule(capsule, diag, &name) ||
        !ic_as_copy_struct(capsule, name, diag, ret_inter) || !ic_as_check_two_nd(&check))
        return 0;
    ic_as_check_type(&check);
    ic_as_check_byte_order(&check);
    ic_as_check_descr(&check);
    if (!ic_as_view_shape(&check) || !ic_as_view_strides(&check))
        return 0;
    ic_as_check_contiguity_flags(&check);
    if (!ic_as_check_data_pointer(&check) || !ic_as_check_data_readable(&check))
        return 0;
    check.view.dtype = check.type.dtype;
    check.view.readonly = !(ret_inter->flags & IC_ARR_WRITEABLE);
    *ret_view = check.view;
    *ret_have_view = true;
    return 0;
}

int ic_array_struct_check(PyObject *capsule, struct ic_diag *diag, struct ic_view *ret_view,
                          bool *ret_have_view)
{
    struct ic_pyarrayinterface inter;
    if (!capsule || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    return ic_as_check_guarded(capsule, diag, ret_view, ret_have_view, &inter);
}

/* ---------------------------------------------------------------------------------------
 * Ops
 */

static void ic_as_record(PyObject *capsule, PyObject *owner, struct ic_export_record *rec)
{
    (void)owner; /* the capsule holds its owner itself */
    struct ic_export_reading r;
    struct ic_pyarrayinterface inter;

    ic_export_reading_init(&r);
    memset(&inter, 0, sizeof(inter));
    if (capsule)
        ic_as_check_guarded(capsule, &r.diag, &r.view, &r.have_view, &inter);
    if (inter.two == 2)
        snprintf(r.detail, sizeof(r.detail), "PyArrayInterface typekind=%c itemsize=%d flags=0x%x",
                 inter.typekind ? inter.typekind : '?', inter.itemsize, inter.flags);
    else
        snprintf(r.detail, sizeof(r.detail), "__array_struct__ (unreadable)");
    ic_export_keep(rec, &r);
    rec->zero_copy_known = true; /* the struct points at the producer's memory */
}

IC_ATTRIBUTE_PROTOCOL(ic_as, "__array_struct__", "interopcheck.ArrayStructProxy", ic_as_record)

const struct ic_protocol_ops ic_array_struct_ops = {
    .protocol = IC_PROTOCOL_ARRAY_STRUCT,
    .facts = {.readonly_rule = IC_RULE_ARRAY_STRUCT_FLAGS,
              .memory_rule = IC_RULE_ARRAY_STRUCT_MEMORY,
              .dtype_names = IC_NAMES_TYPESTR},
    .proxy_new = ic_as_proxy_new,
    .reference_consume = ic_as_reference_consume,
};
