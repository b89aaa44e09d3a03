#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_cai.h"

#include <stdio.h>
#include <string.h>

#include "ic_array_interface.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_proxy.h"
#include "ic_python.h"

#define IC_CAI_RULE_DICT    IC_RULE_CAI_DICT
#define IC_CAI_RULE_VERSION IC_RULE_CAI_VERSION
#define IC_CAI_RULE_SHAPE   IC_RULE_CAI_SHAPE
#define IC_CAI_RULE_TYPE    IC_RULE_CAI_TYPESTR
#define IC_CAI_RULE_DATA    IC_RULE_CAI_DATA
#define IC_CAI_RULE_STRIDES IC_RULE_CAI_STRIDES
#define IC_CAI_RULE_DESCR   IC_RULE_CAI_DESCR
#define IC_CAI_RULE_MASK    IC_RULE_CAI_MASK
#define IC_CAI_RULE_STREAM  IC_RULE_CAI_STREAM

#define IC_CAI_ATTR "__cuda_array_interface__"

/* How deep a mask's own mask is followed. */
#define IC_CAI_MAX_DEPTH 8

/* What the checks of one dict share while they run. */
struct ic_cai_state {
    struct ic_diag *diag;
    struct ic_view view;
    struct ic_typestr typestr;
    struct ic_cai_info info;
    char typestr_text[64];
    bool have_typestr; /* typestr parsed and usable: view.itemsize is set */
    bool shape_known;  /* view.ndim and view.shape are set, numel is their product */
    bool describable;  /* nothing so far prevents a view */
    int64_t numel;
};

/* ---------------------------------------------------------------------------------------
 * The keys, one rule each
 */

/* Rule 3.1.2. */
static void ic_cai_check_version(PyObject *version, struct ic_cai_state *st)
{
    char text[64];
    int64_t number = 0;
    bool exact = true;

    st->info.stream_applies = true; /* unless a readable version says otherwise */
    if (!version)
        return; /* reported as a missing key (3.1.1) */
    int rc = PyBool_Check(version) ? IC_EINVAL : ic_export_int64(version, &number, &exact);
    if (rc == IC_ERANGE) {
        ic_py_repr(version, text, sizeof(text));
        ic_diag_error(st->diag, IC_CAI_RULE_VERSION,
                      "version %s does not fit in int64: it must be a small int (current: %d)",
                      text, IC_CAI_VERSION);
        return;
    }
    if (rc < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_VERSION, "version is a %s: it must be an int (%d)",
                      Py_TYPE(version)->tp_name, IC_CAI_VERSION);
        return;
    }
    if (!exact)
        ic_diag_warn(st->diag, IC_CAI_RULE_VERSION, "version is a %s, not a Python int",
                     Py_TYPE(version)->tp_name);
    if (number < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_VERSION,
                      "version %lld is negative: versions are 0 to %d", (long long)number,
                      IC_CAI_VERSION);
        return;
    }
    st->info.have_version = true;
    st->info.version = number;
    st->info.stream_applies = number >= IC_CAI_VERSION;
    if (number > IC_CAI_VERSION)
        ic_diag_warn(st->diag, IC_CAI_RULE_VERSION,
                     "version %lld is newer than the %d the tester knows: checked as version %d "
                     "(not rejected, §8.8)",
                     (long long)number, IC_CAI_VERSION, IC_CAI_VERSION);
}

/* Rule 3.1.3: a tuple of ints >= 0 whose product (and size in bytes) fits in int64. */
static void ic_cai_check_shape(PyObject *shape, struct ic_cai_state *st)
{
    char text[160];
    int ndim = 0;

    if (!shape)
        return; /* 3.1.1 */
    if (!ic_export_int_tuple(shape, "shape", IC_CAI_RULE_SHAPE, st->view.shape, &ndim, st->diag))
        return;
    st->view.ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (st->view.shape[i] < 0) {
            ic_diag_error(st->diag, IC_CAI_RULE_SHAPE, "shape[%d] is %lld: extents must be >= 0", i,
                          (long long)st->view.shape[i]);
            return;
        }
    }
    if (ic_view_numel(&st->view, &st->numel) < 0) {
        ic_view_format_shape(&st->view, text, sizeof(text));
        ic_diag_error(st->diag, IC_CAI_RULE_SHAPE, "the element count of shape %s overflows int64",
                      text);
        return;
    }
    int64_t nbytes = 0;
    if (st->have_typestr &&
        __builtin_mul_overflow(st->numel, (int64_t)st->view.itemsize, &nbytes)) {
        ic_diag_error(st->diag, IC_CAI_RULE_SHAPE,
                      "%lld elements of %d bytes: the size in bytes overflows int64",
                      (long long)st->numel, st->view.itemsize);
        return;
    }
    st->shape_known = true;
}

/* Rule 3.1.4: the typestr grammar (§4.2), a size > 0, and a byte order the GPU has. */
static void ic_cai_check_typestr(PyObject *obj, struct ic_cai_state *st)
{
    char reason[96];
    char *text = st->typestr_text;
    size_t size = sizeof(st->typestr_text);
    struct ic_typestr *t = &st->typestr;

    if (!obj)
        return; /* 3.1.1 */
    if (PyUnicode_Check(obj)) {
        if (ic_py_str_copy(obj, text, size) < 0) {
            ic_diag_error(st->diag, IC_CAI_RULE_TYPE, "typestr is a str that is not valid UTF-8");
            return;
        }
    } else if (PyBytes_Check(obj)) {
        snprintf(text, size, "%.*s", (int)PyBytes_GET_SIZE(obj), PyBytes_AS_STRING(obj));
        ic_diag_warn(st->diag, IC_CAI_RULE_TYPE,
                     "typestr is bytes b\"%s\": the protocol specifies a str (NumPy-based "
                     "consumers accept both)",
                     text);
    } else {
        ic_diag_error(st->diag, IC_CAI_RULE_TYPE,
                      "typestr is a %s: it must be a str such as \"<f4\"", Py_TYPE(obj)->tp_name);
        return;
    }
    if (ic_typestr_parse(text, t, reason, sizeof(reason)) < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_TYPE,
                      "typestr \"%s\": %s; it must be <byteorder><kind><size> (§4.2), and "
                      "non-standard names (bfloat16, fp8) have no typestr",
                      text, reason);
        return;
    }
    if (t->itemsize <= 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_TYPE,
                      "typestr \"%s\" has size %lld: the size must be > 0", text,
                      (long long)t->count);
        return;
    }
    if (t->itemsize > INT32_MAX) {
        ic_diag_error(st->diag, IC_CAI_RULE_TYPE, "typestr \"%s\": itemsize %lld is too large",
                      text, (long long)t->itemsize);
        return;
    }
    bool order_free = t->itemsize <= 1 || strchr("bSVOt", t->kind) != NULL;
    if (t->byteorder == '>' && !order_free) {
        ic_diag_error(st->diag, IC_CAI_RULE_TYPE,
                      "typestr \"%s\" is big-endian: GPU data is little-endian, so a %lld-byte "
                      "'%c' needs byte order '<' (or '|' when order does not matter)",
                      text, (long long)t->itemsize, t->kind);
        return;
    }
    if (!t->standard_order)
        ic_diag_warn(st->diag, IC_CAI_RULE_TYPE,
                     "typestr \"%s\" uses byte order '%c': the protocol lists only '<', '>' and "
                     "'|' (read as native, little-endian)",
                     text, t->byteorder);
    else if (t->byteorder == '|' && !order_free && strchr("iufcmMU", t->kind))
        ic_diag_warn(st->diag, IC_CAI_RULE_TYPE,
                     "typestr \"%s\" says the byte order is irrelevant for a %lld-byte number: "
                     "it is read as little-endian",
                     text, (long long)t->itemsize);
    if (t->kind == 'O')
        ic_diag_warn(st->diag, IC_CAI_RULE_TYPE,
                     "typestr \"%s\" holds Python object pointers: they mean nothing in device "
                     "memory",
                     text);
    st->have_typestr = true;
    st->view.itemsize = (int)t->itemsize;
}

/* Rule 3.1.7: a descr, when present, totals the typestr's size. */
static void ic_cai_check_descr(PyObject *descr, struct ic_cai_state *st)
{
    char why[128];
    int64_t total = 0;

    if (!descr || !st->have_typestr)
        return;
    if (ic_descr_size(descr, &total, why, sizeof(why)) < 0)
        ic_diag_error(st->diag, IC_CAI_RULE_DESCR,
                      "%s: descr must be a list of (name, type[, "
                      "shape]) tuples as in NumPy",
                      why);
    else if (total != st->typestr.itemsize)
        ic_diag_error(st->diag, IC_CAI_RULE_DESCR,
                      "descr totals %lld bytes but typestr \"%s\" has %lld: they must match",
                      (long long)total, st->typestr_text, (long long)st->typestr.itemsize);
}

/* Rule 3.1.6: absent or None (C strides), or one int per dimension, in bytes; the addressed
 * span fits in int64. Needs the shape and the typestr. */
static void ic_cai_check_strides(PyObject *strides, struct ic_cai_state *st)
{
    char text[160];
    int64_t lo = 0, hi = 0;

    if (!st->shape_known || !st->have_typestr) {
        st->describable = false;
        return;
    }
    if (!strides || strides == Py_None) {
        if (ic_view_set_c_strides(&st->view) < 0) {
            ic_diag_error(st->diag, IC_CAI_RULE_STRIDES, "the C-contiguous strides overflow int64");
            st->describable = false;
        }
        return;
    }
    int count = 0;
    if (!ic_export_int_tuple(strides, "strides", IC_CAI_RULE_STRIDES, st->view.strides, &count,
                             st->diag)) {
        st->describable = false;
        return;
    }
    if (count != st->view.ndim) {
        ic_diag_error(st->diag, IC_CAI_RULE_STRIDES,
                      "strides has %d entries for %d dimensions: len(strides) must equal "
                      "len(shape), or strides must be None",
                      count, st->view.ndim);
        st->describable = false;
        return;
    }
    if (ic_view_span(&st->view, &lo, &hi) < 0) {
        ic_view_format_strides(&st->view, text, sizeof(text));
        ic_diag_error(st->diag, IC_CAI_RULE_STRIDES,
                      "the bytes addressed through strides %s overflow int64", text);
        st->describable = false;
        return;
    }
    for (int i = 0; i < count; i++) {
        if (st->view.strides[i] % st->view.itemsize != 0) {
            ic_view_format_strides(&st->view, text, sizeof(text));
            ic_diag_warn(st->diag, IC_CAI_RULE_STRIDES,
                         "strides %s (bytes): strides[%d] = %lld is not a multiple of the "
                         "itemsize %d; legal, but consumers that use element strides reject it",
                         text, i, (long long)st->view.strides[i], st->view.itemsize);
            break;
        }
    }
}

/* Rule 3.1.5: (pointer, readonly); pointer 0 exactly when the array is empty. */
static void ic_cai_check_data(PyObject *data, struct ic_cai_state *st)
{
    struct ic_py_exc exc;
    char text[64];
    uintptr_t address = 0;

    if (!data) {
        st->describable = false; /* 3.1.1 */
        return;
    }
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        ic_py_repr(data, text, sizeof(text));
        ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                      "data is %s (a %s): it must be a 2-tuple (pointer, readonly)", text,
                      Py_TYPE(data)->tp_name);
        st->describable = false;
        return;
    }
    PyObject *pointer = PyTuple_GET_ITEM(data, 0); /* borrowed: the tuple is immutable */
    PyObject *readonly = PyTuple_GET_ITEM(data, 1);

    int rc = ic_export_uintptr(pointer, &address);
    if (rc == IC_ERANGE) {
        ic_py_repr(pointer, text, sizeof(text));
        ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                      "data[0] = %s: the pointer must be an int in [0, %#llx]", text,
                      (unsigned long long)UINTPTR_MAX);
        st->describable = false;
    } else if (rc < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_DATA, "data[0] is a %s: the pointer must be an int",
                      Py_TYPE(pointer)->tp_name);
        st->describable = false;
    }

    if (PyBool_Check(readonly)) {
        st->view.readonly = readonly == Py_True;
    } else {
        int truth = PyObject_IsTrue(readonly);
        if (truth < 0) {
            ic_py_fetch(&exc);
            ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                          "data[1] is a %s without a truth value (%s: %s): it must be a bool",
                          Py_TYPE(readonly)->tp_name, exc.type, exc.message);
            st->describable = false;
        } else if (PyLong_Check(readonly)) {
            ic_diag_warn(st->diag, IC_CAI_RULE_DATA, "data[1] is a %s, not a bool: read as %s",
                         Py_TYPE(readonly)->tp_name, truth ? "read-only" : "writable");
        } else {
            ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                          "data[1] is a %s: the read-only flag must be a bool (read as %s)",
                          Py_TYPE(readonly)->tp_name, truth ? "read-only" : "writable");
        }
        if (truth >= 0)
            st->view.readonly = truth != 0;
    }

    if (rc < 0 || !st->shape_known)
        return;
    st->view.data = address;
    if (st->numel == 0 && address != 0) {
        if (st->info.have_version && st->info.version < 2)
            ic_diag_warn(st->diag, IC_CAI_RULE_DATA,
                         "data[0] = %#llx for an empty array: version %lld predates the rule "
                         "(version 2) that the pointer of an empty array is 0",
                         (unsigned long long)address, (long long)st->info.version);
        else
            ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                          "data[0] = %#llx for an empty array: the pointer of a zero-size "
                          "array must be 0",
                          (unsigned long long)address);
    } else if (st->numel > 0 && address == 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_DATA,
                      "data[0] is 0 for %lld elements: only a zero-size array may have pointer 0",
                      (long long)st->numel);
        st->describable = false;
    }
}

/* Rule 3.1.9: absent, None, or an int naming a stream; 0 and negative values are errors. */
static void ic_cai_check_stream(PyObject *stream, struct ic_cai_state *st)
{
    char text[64];
    int64_t value = 0;
    bool exact = true;

    if (!stream || stream == Py_None)
        return; /* no synchronisation needed */
    ic_py_repr(stream, text, sizeof(text));
    if (!st->info.stream_applies) {
        ic_diag_warn(st->diag, IC_CAI_RULE_VERSION,
                     "stream %s in a version %lld export: streams came with version 3, so "
                     "consumers ignore it",
                     text, (long long)st->info.version);
        return;
    }
    int rc = PyBool_Check(stream) ? IC_EINVAL : ic_export_int64(stream, &value, &exact);
    if (rc == IC_ERANGE) {
        ic_diag_error(st->diag, IC_CAI_RULE_STREAM,
                      "stream %s does not fit in int64: no cudaStream_t handle is that large",
                      text);
        return;
    }
    if (rc < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_STREAM,
                      "stream is %s (a %s): it must be None or an int (1, 2 or a cudaStream_t)",
                      text, Py_TYPE(stream)->tp_name);
        return;
    }
    if (value == 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_STREAM,
                      "stream 0 is disallowed (ambiguous): the legacy default stream is 1, the "
                      "per-thread default stream 2, and None means no synchronisation");
        return;
    }
    if (value < 0) {
        ic_diag_error(st->diag, IC_CAI_RULE_STREAM,
                      "stream %lld is negative: it must be None, 1, 2 or a cudaStream_t handle",
                      (long long)value);
        return;
    }
    if (!exact)
        ic_diag_warn(st->diag, IC_CAI_RULE_STREAM, "stream is a %s, not a Python int",
                     Py_TYPE(stream)->tp_name);
    st->info.has_stream = true;
    st->info.stream = value;
}

static int ic_cai_check_dict(PyObject *value, int depth, struct ic_diag *diag,
                             struct ic_view *ret_view, bool *ret_have_view,
                             struct ic_cai_info *ret_info);

/* Rule 3.1.8: None, or an object whose own __cuda_array_interface__ is valid and whose shape
 * broadcasts to the array's shape. */
static void ic_cai_check_mask(PyObject *mask, int depth, struct ic_cai_state *st)
{
    PyObject *interface = NULL;
    struct ic_py_exc exc;
    struct ic_diag mask_diag;
    struct ic_view mask_view;
    bool have_mask_view = false;
    char mask_shape[160], shape[160];

    if (!mask || mask == Py_None)
        return;
    st->info.has_mask = true;
    ic_diag_warn(st->diag, IC_CAI_RULE_MASK,
                 "a mask is present: many consumers reject masks (Numba raises "
                 "NotImplementedError), others ignore them and see masked elements");
    if (depth >= IC_CAI_MAX_DEPTH)
        return;
    interface = PyObject_GetAttrString(mask, IC_CAI_ATTR);
    if (!interface) {
        ic_py_fetch(&exc);
        ic_diag_error(st->diag, IC_CAI_RULE_MASK,
                      "mask is a %s whose " IC_CAI_ATTR " raised %s: %s; the mask must be None "
                      "or expose the CUDA Array Interface",
                      Py_TYPE(mask)->tp_name, exc.type, exc.message);
        goto cleanup;
    }
    ic_diag_init(&mask_diag);
    memset(&mask_view, 0, sizeof(mask_view));
    ic_cai_check_dict(interface, depth + 1, &mask_diag, &mask_view, &have_mask_view, NULL);
    const struct ic_diag_entry *first = ic_diag_first_error(&mask_diag);
    if (first) {
        ic_diag_error(st->diag, IC_CAI_RULE_MASK, "the mask's " IC_CAI_ATTR " is invalid: [%s] %s",
                      ic_rule_id(first->rule), first->message);
        goto cleanup;
    }
    if (!have_mask_view || !st->shape_known)
        goto cleanup;
    /* NumPy broadcasting towards the array: align on the right; each mask extent is 1 or
     * equal to the array's; the mask has no more dimensions than the array. */
    const struct ic_view *view = &st->view;
    bool broadcasts = mask_view.ndim <= view->ndim;
    for (int i = 1; broadcasts && i <= mask_view.ndim; i++) {
        int64_t m = mask_view.shape[mask_view.ndim - i], s = view->shape[view->ndim - i];
        broadcasts = m == 1 || m == s;
    }
    if (!broadcasts) {
        ic_view_format_shape(&mask_view, mask_shape, sizeof(mask_shape));
        ic_view_format_shape(view, shape, sizeof(shape));
        ic_diag_error(st->diag, IC_CAI_RULE_MASK,
                      "mask shape %s does not broadcast to shape %s: aligned on the right, each "
                      "mask extent must be 1 or equal the array's",
                      mask_shape, shape);
    }

cleanup:
    Py_XDECREF(interface);
}

/* ---------------------------------------------------------------------------------------
 * The dict (rules 3.1.1-3.1.9)
 */

static int ic_cai_check_dict(PyObject *value, int depth, struct ic_diag *diag,
                             struct ic_view *ret_view, bool *ret_have_view,
                             struct ic_cai_info *ret_info)
{
    PyObject *shape = NULL, *typestr = NULL, *data = NULL, *version = NULL;
    PyObject *strides = NULL, *descr = NULL, *mask = NULL, *stream = NULL;
    struct ic_cai_state st;

    *ret_have_view = false;
    memset(&st, 0, sizeof(st));
    st.diag = diag;
    st.describable = true;
    st.view.device_type = IC_DEVICE_CUDA;
    st.view.device_id = -1; /* the dict does not say: the exchange asks the driver */
    st.view.readonly_known = true;
    st.typestr.dtype = IC_DTYPE_INVALID;

    /* 3.1.1 */
    if (!PyDict_Check(value)) {
        ic_diag_error(diag, IC_CAI_RULE_DICT, IC_CAI_ATTR " is a %s: it must be a dict",
                      Py_TYPE(value)->tp_name);
        st.info.stream_applies = true;
        goto cleanup;
    }
    /* Strong references: reading a mask runs producer code, which could change the dict.
     * PyDict_GetItemString raises nothing (the keys looked up are str). */
    shape = Py_XNewRef(PyDict_GetItemString(value, "shape"));
    typestr = Py_XNewRef(PyDict_GetItemString(value, "typestr"));
    data = Py_XNewRef(PyDict_GetItemString(value, "data"));
    version = Py_XNewRef(PyDict_GetItemString(value, "version"));
    strides = Py_XNewRef(PyDict_GetItemString(value, "strides"));
    descr = Py_XNewRef(PyDict_GetItemString(value, "descr"));
    mask = Py_XNewRef(PyDict_GetItemString(value, "mask"));
    stream = Py_XNewRef(PyDict_GetItemString(value, "stream"));
    static const char *const required[] = {"shape", "typestr", "data", "version"};
    PyObject *const found[] = {shape, typestr, data, version};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!found[i]) {
            ic_diag_error(diag, IC_CAI_RULE_DICT,
                          "required key '%s' is missing: shape, typestr, data and version are "
                          "required",
                          required[i]);
        }
    }

    ic_cai_check_version(version, &st);  /* 3.1.2 */
    ic_cai_check_typestr(typestr, &st);  /* 3.1.4 */
    ic_cai_check_descr(descr, &st);      /* 3.1.7 */
    ic_cai_check_shape(shape, &st);      /* 3.1.3 */
    ic_cai_check_strides(strides, &st);  /* 3.1.6 */
    ic_cai_check_data(data, &st);        /* 3.1.5 */
    ic_cai_check_mask(mask, depth, &st); /* 3.1.8 */
    ic_cai_check_stream(stream, &st);    /* 3.1.9 */

    if (st.describable && st.have_typestr && st.shape_known) {
        st.view.dtype = st.typestr.dtype;
        *ret_view = st.view;
        *ret_have_view = true;
    }

cleanup:
    if (ret_info)
        *ret_info = st.info;
    Py_XDECREF(shape);
    Py_XDECREF(typestr);
    Py_XDECREF(data);
    Py_XDECREF(version);
    Py_XDECREF(strides);
    Py_XDECREF(descr);
    Py_XDECREF(mask);
    Py_XDECREF(stream);
    return 0;
}

int ic_cai_check(PyObject *value, struct ic_diag *diag, struct ic_view *ret_view,
                 bool *ret_have_view, struct ic_cai_info *ret_info)
{
    if (!value || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    return ic_cai_check_dict(value, 0, diag, ret_view, ret_have_view, ret_info);
}

/* ---------------------------------------------------------------------------------------
 * Ops
 */

static void ic_cai_describe(PyObject *value, const struct ic_cai_info *info, char *buf, size_t size)
{
    char typestr[32] = "?", version[24] = "?", stream[32] = "None";

    if (PyDict_Check(value)) {
        PyObject *typestr_obj = PyDict_GetItemString(value, "typestr"); /* borrowed */
        if (!typestr_obj || ic_py_str_copy(typestr_obj, typestr, sizeof(typestr)) < 0)
            snprintf(typestr, sizeof(typestr), "?");
    }
    if (info->have_version)
        snprintf(version, sizeof(version), "%lld", (long long)info->version);
    if (info->has_stream)
        snprintf(stream, sizeof(stream), "%lld", (long long)info->stream);
    else if (!info->stream_applies)
        snprintf(stream, sizeof(stream), "n/a");
    snprintf(buf, size, IC_CAI_ATTR " version=%s typestr=%s stream=%s%s", version, typestr, stream,
             info->has_mask ? " mask" : "");
}

/* Validates one read of the attribute into the record. */
static void ic_cai_record(PyObject *value, PyObject *target, struct ic_export_record *rec)
{
    struct ic_export_reading r;
    struct ic_cai_info info;

    (void)target;
    ic_export_reading_init(&r);
    memset(&info, 0, sizeof(info));
    ic_cai_check(value, &r.diag, &r.view, &r.have_view, &info);
    ic_cai_describe(value, &info, r.detail, sizeof(r.detail));
    /* The stream goes with the view: ic_export_record keeps the first read's view, or the
     * first describable one. */
    bool kept = (!rec->have_view && rec->detail[0] == '\0') || (r.have_view && !rec->have_view);
    ic_export_keep(rec, &r);
    if (kept) {
        rec->has_stream = info.has_stream;
        rec->stream = info.has_stream ? info.stream : 0;
        rec->legacy_stream_implied = info.have_version && !info.stream_applies;
    }
    rec->zero_copy_known = true; /* the dict points at the producer's memory */
}

IC_ATTRIBUTE_PROTOCOL(ic_cai, IC_CAI_ATTR, "interopcheck.CudaArrayInterfaceProxy", ic_cai_record)

const struct ic_protocol_ops ic_cai_ops = {
    .protocol = IC_PROTOCOL_CAI,
    .facts = {.readonly_rule = IC_RULE_CAI_READONLY,
              .memory_rule = IC_RULE_CAI_DATA,
              .device_pointer_rule = IC_RULE_CAI_DEVICE_POINTER,
              .stream_order_rule = IC_RULE_CAI_STREAM_ORDER,
              .dtype_names = IC_NAMES_TYPESTR,
              .device_only = true,
              .export_names_stream = true,
              .device_from_driver = true,
              .stream_order_variant = IC_VARIANT_CAI_STREAM_ORDER},
    .proxy_new = ic_cai_proxy_new,
    .reference_consume = ic_cai_reference_consume,
};
