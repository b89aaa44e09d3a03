#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_array_interface.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_export.h"
#include "ic_proxy.h"
#include "ic_python.h"

#define IC_AI_RULE_DICT  IC_RULE_ARRAY_INTERFACE_DICT
#define IC_AI_RULE_SHAPE IC_RULE_ARRAY_INTERFACE_SHAPE
#define IC_AI_RULE_TYPE  IC_RULE_ARRAY_INTERFACE_TYPESTR
#define IC_AI_RULE_DATA  IC_RULE_ARRAY_INTERFACE_DATA
#define IC_AI_RULE_MASK  IC_RULE_ARRAY_INTERFACE_MASK

/* How deep a mask's own mask, or a descr's nested descr, is followed. */
#define IC_AI_MAX_DEPTH 8

static bool ic_host_is_little_endian(void)
{
    return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}

/* ---------------------------------------------------------------------------------------
 * typestr (§4.2)
 */

static bool ic_typestr_size_legal(char kind, int64_t count)
{
    switch (kind) {
    case 'b':
        return count == 1;
    case 'i':
    case 'u':
        return count == 1 || count == 2 || count == 4 || count == 8;
    case 'f': /* binary16/32/64 and the long double layouts of x86 (10, 12, 16) */
        return count == 2 || count == 4 || count == 8 || count == 10 || count == 12 || count == 16;
    case 'c':
        return count == 8 || count == 16 || count == 20 || count == 24 || count == 32;
    case 'm':
    case 'M':
        return count == 8;
    case 'O':
        return count == (int64_t)sizeof(void *);
    case 't':
        return count > 0;
    default: /* S, U, V: a zero size is what NumPy writes for empty strings and voids */
        return count >= 0;
    }
}

int ic_typestr_parse(const char *text, struct ic_typestr *ret, char *why, size_t why_size)
{
    struct ic_typestr parsed;
    const char *p = text;

    if (!text || !ret) {
        snprintf(why, why_size, "no typestr");
        return IC_EINVAL;
    }
    memset(&parsed, 0, sizeof(parsed));
    parsed.byteorder = *p;
    if (*p == '<' || *p == '>' || *p == '|') {
        parsed.standard_order = true;
    } else if (*p != '=') {
        snprintf(why, why_size, "it does not start with a byte order ('<', '>' or '|')");
        return IC_EINVAL;
    }
    p++;
    if (*p == '\0' || !strchr("tbiufcmMOSUV", *p)) {
        snprintf(why, why_size, "'%c' is not a typestr kind (one of tbiufcmMOSUV)", *p ? *p : '?');
        return IC_EINVAL;
    }
    parsed.kind = *p++;
    int digits = 0;
    while (isdigit((unsigned char)*p)) {
        if (++digits > 15) {
            snprintf(why, why_size, "the size has more than 15 digits");
            return IC_EINVAL;
        }
        parsed.count = parsed.count * 10 + (*p++ - '0');
    }
    if (digits == 0) {
        if (parsed.kind != 'O') {
            snprintf(why, why_size, "no size after the kind '%c'", parsed.kind);
            return IC_EINVAL;
        }
        parsed.count = (int64_t)sizeof(void *); /* NumPy writes "|O" */
    }
    if (*p == '[' && (parsed.kind == 'm' || parsed.kind == 'M')) {
        const char *close = strchr(p, ']');
        size_t length = close ? (size_t)(close - p - 1) : 0;
        bool ok = close && length > 0 && length < sizeof(parsed.unit) &&
                  isalpha((unsigned char)close[-1]);
        for (size_t i = 0; ok && i < length; i++) {
            unsigned char c = (unsigned char)p[1 + i];
            /* a unit is an optional multiplier and letters: "ns", "2s", "generic" */
            ok = isalpha(c) || (isdigit(c) && !isalpha((unsigned char)p[i]));
        }
        if (!ok) {
            snprintf(why, why_size, "the datetime unit is malformed");
            return IC_EINVAL;
        }
        memcpy(parsed.unit, p + 1, length);
        parsed.unit[length] = '\0';
        p = close + 1;
    }
    if (*p != '\0') {
        snprintf(why, why_size, "unexpected text after the size");
        return IC_EINVAL;
    }
    if (!ic_typestr_size_legal(parsed.kind, parsed.count)) {
        snprintf(why, why_size, "size %lld is not legal for kind '%c'", (long long)parsed.count,
                 parsed.kind);
        return IC_EINVAL;
    }
    if (parsed.kind == 'U')
        parsed.itemsize = parsed.count * 4; /* characters of UCS4 (§8.9) */
    else if (parsed.kind == 't')
        parsed.itemsize = (parsed.count + 7) / 8;
    else
        parsed.itemsize = parsed.count;

    bool order_free = parsed.itemsize <= 1 || parsed.kind == 'b' || parsed.kind == 'S' ||
                      parsed.kind == 'V' || parsed.kind == 'O' || parsed.kind == 't';
    if (order_free || parsed.byteorder == '|' || parsed.byteorder == '=')
        parsed.native = true;
    else
        parsed.native = (parsed.byteorder == '<') == ic_host_is_little_endian();
    parsed.dtype = IC_DTYPE_INVALID;
    if (parsed.native &&
        ic_dtype_from_typestr_kind(parsed.kind, (long)parsed.itemsize, &parsed.dtype) < 0)
        parsed.dtype = IC_DTYPE_INVALID;
    *ret = parsed;
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * descr: the byte total of a list of (name, type[, shape]) fields
 */

static int ic_ai_descr_size(PyObject *descr, int depth, int64_t *ret_size, char *why,
                            size_t why_size)
{
    char text[64];
    int64_t total = 0;

    if (depth > IC_AI_MAX_DEPTH) {
        snprintf(why, why_size, "descr is nested more than %d levels deep", IC_AI_MAX_DEPTH);
        return IC_EINVAL;
    }
    if (!PyList_Check(descr)) {
        snprintf(why, why_size, "descr is a %s, not a list", Py_TYPE(descr)->tp_name);
        return IC_EINVAL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(descr); i++) {
        PyObject *field = PyList_GET_ITEM(descr, i); /* borrowed */
        if (!PyTuple_Check(field) || PyTuple_GET_SIZE(field) < 2 || PyTuple_GET_SIZE(field) > 3) {
            snprintf(why, why_size, "descr[%zd] is not a (name, type[, shape]) tuple", i);
            return IC_EINVAL;
        }
        PyObject *name = PyTuple_GET_ITEM(field, 0); /* borrowed, like the items below */
        bool name_ok =
            PyUnicode_Check(name) || (PyTuple_Check(name) && PyTuple_GET_SIZE(name) == 2 &&
                                      PyUnicode_Check(PyTuple_GET_ITEM(name, 0)) &&
                                      PyUnicode_Check(PyTuple_GET_ITEM(name, 1)));
        if (!name_ok) {
            snprintf(why, why_size, "descr[%zd] name is a %s, not a str or (title, name)", i,
                     Py_TYPE(name)->tp_name);
            return IC_EINVAL;
        }
        PyObject *type = PyTuple_GET_ITEM(field, 1);
        int64_t size = 0;
        if (PyUnicode_Check(type)) {
            struct ic_typestr parsed;
            char reason[96];
            if (ic_py_str_copy(type, text, sizeof(text)) < 0 ||
                ic_typestr_parse(text, &parsed, reason, sizeof(reason)) < 0) {
                snprintf(why, why_size, "descr[%zd] type \"%s\": %s", i, text, reason);
                return IC_EINVAL;
            }
            size = parsed.itemsize;
        } else if (PyList_Check(type)) {
            int rc = ic_ai_descr_size(type, depth + 1, &size, why, why_size);
            if (rc < 0)
                return rc;
        } else {
            snprintf(why, why_size, "descr[%zd] type is a %s, not a typestr or a list", i,
                     Py_TYPE(type)->tp_name);
            return IC_EINVAL;
        }
        if (PyTuple_GET_SIZE(field) == 3) {
            PyObject *shape = PyTuple_GET_ITEM(field, 2);
            int64_t extent;
            if (ic_export_int64(shape, &extent, NULL) == 0) {
                if (extent < 0 || __builtin_mul_overflow(size, extent, &size)) {
                    snprintf(why, why_size, "descr[%zd] shape is out of range", i);
                    return IC_EINVAL;
                }
            } else if (PyTuple_Check(shape)) {
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(shape); k++) {
                    if (ic_export_int64(PyTuple_GET_ITEM(shape, k), &extent, NULL) < 0 ||
                        extent < 0 || __builtin_mul_overflow(size, extent, &size)) {
                        snprintf(why, why_size, "descr[%zd] shape is out of range", i);
                        return IC_EINVAL;
                    }
                }
            } else {
                snprintf(why, why_size, "descr[%zd] shape is a %s, not a tuple of ints", i,
                         Py_TYPE(shape)->tp_name);
                return IC_EINVAL;
            }
        }
        if (__builtin_add_overflow(total, size, &total)) {
            snprintf(why, why_size, "the descr byte total overflows int64");
            return IC_EINVAL;
        }
    }
    *ret_size = total;
    return 0;
}

int ic_descr_size(PyObject *descr, int64_t *ret_size, char *why, size_t why_size)
{
    if (!descr || !ret_size) {
        snprintf(why, why_size, "no descr");
        return IC_EINVAL;
    }
    return ic_ai_descr_size(descr, 0, ret_size, why, why_size);
}

/* ---------------------------------------------------------------------------------------
 * The dict (rules 4.5.1-5)
 */

static int ic_ai_check(PyObject *value, PyObject *owner, int depth, struct ic_diag *diag,
                       struct ic_view *ret_view, bool *ret_have_view);

/* Rule 4.5.5: None, or an object whose own interface is valid and broadcasts to the shape. */
static void ic_ai_check_mask(PyObject *mask, const struct ic_view *view, bool shape_known,
                             int depth, struct ic_diag *diag)
{
    PyObject *interface = NULL;
    struct ic_diag mask_diag;
    struct ic_view mask_view;
    bool have_mask_view = false;

    ic_diag_warn(diag, IC_AI_RULE_MASK,
                 "a mask is present: NumPy ignores it, so consumers will see masked elements");
    if (depth >= IC_AI_MAX_DEPTH)
        return;
    interface = PyObject_GetAttrString(mask, "__array_interface__");
    if (!interface) {
        PyErr_Clear();
        ic_diag_error(diag, IC_AI_RULE_MASK,
                      "mask is a %s without __array_interface__: it must be None or expose the "
                      "array interface",
                      Py_TYPE(mask)->tp_name);
        goto cleanup;
    }
    ic_diag_init(&mask_diag);
    ic_ai_check(interface, mask, depth + 1, &mask_diag, &mask_view, &have_mask_view);
    const struct ic_diag_entry *first = ic_diag_first_error(&mask_diag);
    if (first) {
        ic_diag_error(diag, IC_AI_RULE_MASK, "the mask's __array_interface__ is invalid: [%s] %s",
                      ic_rule_id(first->rule), first->message);
        goto cleanup;
    }
    if (!have_mask_view || !shape_known)
        goto cleanup;
    bool broadcasts = mask_view.ndim <= view->ndim;
    for (int i = 1; broadcasts && i <= mask_view.ndim; i++) {
        int64_t m = mask_view.shape[mask_view.ndim - i], s = view->shape[view->ndim - i];
        broadcasts = m == 1 || m == s;
    }
    if (!broadcasts) {
        char mask_shape[96], shape[96];
        ic_view_format_shape(&mask_view, mask_shape, sizeof(mask_shape));
        ic_view_format_shape(view, shape, sizeof(shape));
        ic_diag_error(diag, IC_AI_RULE_MASK, "mask shape %s does not broadcast to shape %s",
                      mask_shape, shape);
    }

cleanup:
    Py_XDECREF(interface);
}

/* Learns the address of buffer data (rule 4.5.4 cases b and c): asks `source` for a
 * PyBUF_SIMPLE buffer and checks that the described bytes lie inside it. */
static bool ic_ai_buffer_data(PyObject *source, const char *what, int64_t offset, int64_t lo,
                              int64_t hi, struct ic_diag *diag, uintptr_t *ret_data,
                              bool *ret_readonly)
{
    Py_buffer buffer;
    struct ic_py_exc exc;
    char text[256];

    if (!PyObject_CheckBuffer(source)) {
        ic_diag_error(diag, IC_AI_RULE_DATA,
                      "data is %s, but the %s (a %s) does not export the buffer protocol", what,
                      what, Py_TYPE(source)->tp_name);
        return false;
    }
    memset(&buffer, 0, sizeof(buffer));
    if (PyObject_GetBuffer(source, &buffer, PyBUF_SIMPLE) < 0) {
        ic_py_fetch(&exc);
        ic_py_exc_format(&exc, text, sizeof(text));
        ic_diag_error(diag, IC_AI_RULE_DATA, "data is %s, but its buffer request failed: %s", what,
                      text);
        return false;
    }
    bool ok = true;
    int64_t first_lo, first_hi;
    if (__builtin_add_overflow(offset, lo, &first_lo) ||
        __builtin_add_overflow(offset, hi, &first_hi) || first_lo < 0 ||
        first_hi > (int64_t)buffer.len) {
        ic_diag_error(diag, IC_AI_RULE_DATA,
                      "offset %lld and the shape/strides address bytes [%lld, %lld) of a "
                      "%zd-byte buffer",
                      (long long)offset, (long long)offset + lo, (long long)offset + hi,
                      buffer.len);
        ok = false;
    }
    *ret_data = (uintptr_t)buffer.buf + (uintptr_t)offset;
    *ret_readonly = buffer.readonly != 0;
    PyBuffer_Release(&buffer);
    return ok;
}

/* What the steps of ic_ai_check share: the dict's entries, the view being built, and
 * whether that view can still describe the array. */
struct ic_ai_check_state {
    PyObject *owner;
    struct ic_diag *diag;
    /* Borrowed references; PyDict_GetItemString swallows lookup errors (only str keys). */
    PyObject *shape, *typestr_obj, *version, *descr, *data, *strides, *offset_obj, *mask;
    struct ic_view view;
    struct ic_typestr typestr;
    char typestr_text[160]; /* the typestr as written, for the descr message */
    bool describable, have_typestr, shape_known, offset_given, have_address;
    int64_t numel, nbytes, lo, hi, offset;
    uintptr_t address;
};

static void ic_ai_lookup_keys(struct ic_ai_check_state *st, PyObject *value)
{
    st->shape = PyDict_GetItemString(value, "shape");
    st->typestr_obj = PyDict_GetItemString(value, "typestr");
    st->version = PyDict_GetItemString(value, "version");
    st->descr = PyDict_GetItemString(value, "descr");
    st->data = PyDict_GetItemString(value, "data");
    st->strides = PyDict_GetItemString(value, "strides");
    st->offset_obj = PyDict_GetItemString(value, "offset");
    st->mask = PyDict_GetItemString(value, "mask");
}

/* 4.5.1 */
static void ic_ai_check_required_keys(const struct ic_ai_check_state *st)
{
    struct ic_diag *diag = st->diag;

    if (!st->shape)
        ic_diag_error(diag, IC_AI_RULE_DICT, "required key 'shape' is missing");
    if (!st->typestr_obj)
        ic_diag_error(diag, IC_AI_RULE_DICT, "required key 'typestr' is missing");
    if (!st->version) {
        ic_diag_error(diag, IC_AI_RULE_DICT,
                      "required key 'version' is missing (NumPy ignores it, the protocol "
                      "requires it)");
        return;
    }
    int64_t number = 0;
    if (ic_export_int64(st->version, &number, NULL) < 0 || PyBool_Check(st->version))
        ic_diag_error(diag, IC_AI_RULE_DICT, "version is a %s, not an int",
                      Py_TYPE(st->version)->tp_name);
    else if (number != 3)
        ic_diag_warn(diag, IC_AI_RULE_DICT,
                     "version %lld: the tester knows version 3; other versions are not "
                     "rejected (§8.8)",
                     (long long)number);
}

/* 4.5.3: copies the typestr's text into st->typestr_text; false when it has none. */
static bool ic_ai_typestr_text(struct ic_ai_check_state *st)
{
    PyObject *typestr_obj = st->typestr_obj;
    char *text = st->typestr_text;

    if (PyUnicode_Check(typestr_obj))
        return ic_py_str_copy(typestr_obj, text, sizeof(st->typestr_text)) == 0;
    if (PyBytes_Check(typestr_obj)) {
        snprintf(text, sizeof(st->typestr_text), "%.*s", (int)PyBytes_GET_SIZE(typestr_obj),
                 PyBytes_AS_STRING(typestr_obj));
        ic_diag_warn(st->diag, IC_AI_RULE_TYPE,
                     "typestr is bytes: the protocol specifies a str (NumPy accepts both)");
        return true;
    }
    ic_diag_error(st->diag, IC_AI_RULE_TYPE, "typestr is a %s, not a str",
                  Py_TYPE(typestr_obj)->tp_name);
    return false;
}

/* 4.5.3 */
static void ic_ai_check_typestr(struct ic_ai_check_state *st)
{
    struct ic_typestr *typestr = &st->typestr;
    const char *text = st->typestr_text;
    char reason[96];

    if (!st->typestr_obj || !ic_ai_typestr_text(st))
        return;
    if (ic_typestr_parse(text, typestr, reason, sizeof(reason)) < 0) {
        ic_diag_error(st->diag, IC_AI_RULE_TYPE, "typestr \"%s\": %s", text, reason);
        return;
    }
    st->have_typestr = true;
    if (!typestr->standard_order)
        ic_diag_warn(st->diag, IC_AI_RULE_TYPE,
                     "typestr \"%s\" uses byte order '%c': the protocol lists only '<', "
                     "'>' and '|'",
                     text, typestr->byteorder);
    else if (typestr->byteorder == '|' && typestr->itemsize > 1 && strchr("iufcmMU", typestr->kind))
        ic_diag_warn(st->diag, IC_AI_RULE_TYPE,
                     "typestr \"%s\" says the byte order is irrelevant for a %lld-byte "
                     "number: it is read as native",
                     text, (long long)typestr->itemsize);
    if (typestr->itemsize > INT32_MAX) {
        ic_diag_error(st->diag, IC_AI_RULE_TYPE, "typestr \"%s\": itemsize %lld is too large", text,
                      (long long)typestr->itemsize);
        st->have_typestr = false;
    }
}

/* 4.5.3: a descr must add up to the typestr's itemsize; it only counts with a typestr. */
static void ic_ai_check_descr(struct ic_ai_check_state *st)
{
    char reason[96];
    int64_t total = 0;

    if (st->descr && st->have_typestr) {
        if (ic_ai_descr_size(st->descr, 0, &total, reason, sizeof(reason)) < 0)
            ic_diag_error(st->diag, IC_AI_RULE_TYPE, "%s", reason);
        else if (total != st->typestr.itemsize)
            ic_diag_error(st->diag, IC_AI_RULE_TYPE,
                          "descr totals %lld bytes but typestr \"%s\" has %lld: they must match",
                          (long long)total, st->typestr_text, (long long)st->typestr.itemsize);
    }
    if (!st->have_typestr)
        st->describable = false;
    else
        st->view.itemsize = (int)st->typestr.itemsize;
}

/* 4.5.2: the extents, their element count, and the size in bytes. */
static void ic_ai_check_shape(struct ic_ai_check_state *st)
{
    struct ic_view *view = &st->view;
    char text[160];

    if (st->shape) {
        int ndim = 0;
        st->shape_known =
            ic_export_int_tuple(st->shape, "shape", IC_AI_RULE_SHAPE, view->shape, &ndim, st->diag);
        view->ndim = ndim;
        for (int i = 0; st->shape_known && i < ndim; i++) {
            if (view->shape[i] < 0) {
                ic_diag_error(st->diag, IC_AI_RULE_SHAPE, "shape[%d] is %lld: extents must be >= 0",
                              i, (long long)view->shape[i]);
                st->shape_known = false;
            }
        }
        if (st->shape_known && ic_view_numel(view, &st->numel) < 0) {
            ic_view_format_shape(view, text, sizeof(text));
            ic_diag_error(st->diag, IC_AI_RULE_SHAPE,
                          "the element count of shape %s overflows int64", text);
            st->shape_known = false;
        }
    }
    if (!st->shape_known)
        st->describable = false;
    if (st->describable &&
        __builtin_mul_overflow(st->numel, (int64_t)view->itemsize, &st->nbytes)) {
        ic_diag_error(st->diag, IC_AI_RULE_SHAPE,
                      "%lld elements of %d bytes: the size in bytes overflows int64",
                      (long long)st->numel, view->itemsize);
        st->describable = false;
    }
}

/* 4.5.2: strides as given (None means C-contiguous), and the bytes they address. */
static void ic_ai_check_strides(struct ic_ai_check_state *st)
{
    struct ic_view *view = &st->view;
    char text[160];

    if (st->strides && st->strides != Py_None && st->shape_known) {
        int count = 0;
        if (!ic_export_int_tuple(st->strides, "strides", IC_AI_RULE_SHAPE, view->strides, &count,
                                 st->diag)) {
            st->describable = false;
        } else if (count != view->ndim) {
            ic_diag_error(st->diag, IC_AI_RULE_SHAPE,
                          "strides has %d entries for %d dimensions: len(strides) must equal "
                          "len(shape)",
                          count, view->ndim);
            st->describable = false;
        }
    } else if (st->describable && ic_view_set_c_strides(view) < 0) {
        ic_diag_error(st->diag, IC_AI_RULE_SHAPE, "the C-contiguous strides overflow int64");
        st->describable = false;
    }
    if (st->describable && ic_view_span(view, &st->lo, &st->hi) < 0) {
        ic_view_format_strides(view, text, sizeof(text));
        ic_diag_error(st->diag, IC_AI_RULE_SHAPE,
                      "the bytes addressed through strides %s overflow int64", text);
        st->describable = false;
    }
}

/* 4.5.4 */
static void ic_ai_check_offset(struct ic_ai_check_state *st)
{
    char text[160];

    st->offset_given = st->offset_obj && st->offset_obj != Py_None;
    if (!st->offset_given)
        return;
    int rc = ic_export_int64(st->offset_obj, &st->offset, NULL);
    if (rc < 0 || st->offset < 0) {
        ic_py_repr(st->offset_obj, text, sizeof(text));
        ic_diag_error(st->diag, IC_AI_RULE_DATA, "offset %s: it must be an int >= 0", text);
        st->describable = false;
        st->offset = 0;
    }
}

/* 4.5.4 case a: data is a (pointer, readonly) tuple. */
static void ic_ai_check_data_tuple(struct ic_ai_check_state *st)
{
    PyObject *data = st->data;
    char text[160];

    if (PyTuple_GET_SIZE(data) != 2) {
        ic_diag_error(st->diag, IC_AI_RULE_DATA,
                      "data is a tuple of %zd items: it must be (pointer, readonly)",
                      PyTuple_GET_SIZE(data));
        return;
    }
    PyObject *pointer = PyTuple_GET_ITEM(data, 0); /* borrowed */
    PyObject *readonly = PyTuple_GET_ITEM(data, 1);
    if (ic_export_uintptr(pointer, &st->address) < 0) {
        ic_py_repr(pointer, text, sizeof(text));
        ic_diag_error(st->diag, IC_AI_RULE_DATA,
                      "data[0] = %s: the pointer must be an int in [0, %#llx]", text,
                      (unsigned long long)UINTPTR_MAX);
    } else {
        st->have_address = true;
    }
    int truth = PyObject_IsTrue(readonly);
    if (truth < 0) {
        PyErr_Clear();
        ic_diag_error(st->diag, IC_AI_RULE_DATA, "data[1] (a %s) has no truth value",
                      Py_TYPE(readonly)->tp_name);
        st->have_address = false;
        return;
    }
    if (!PyBool_Check(readonly))
        ic_diag_warn(st->diag, IC_AI_RULE_DATA, "data[1] is a %s, not a bool: read as %s",
                     Py_TYPE(readonly)->tp_name, truth ? "read-only" : "writable");
    st->view.readonly = truth != 0;
}

/* 4.5.4: where the data is, by the form of the data entry (tuple, buffer, None). */
static void ic_ai_check_data(struct ic_ai_check_state *st)
{
    PyObject *data = st->data;

    if (data && PyTuple_Check(data)) {
        ic_ai_check_data_tuple(st);
        if (st->offset_given && st->offset != 0)
            ic_diag_warn(st->diag, IC_AI_RULE_DATA,
                         "offset %lld with a (pointer, readonly) tuple: the pointer is the first "
                         "element and NumPy ignores offset",
                         (long long)st->offset);
    } else if (data && data != Py_None) {
        if (!PyObject_CheckBuffer(data)) {
            ic_diag_error(st->diag, IC_AI_RULE_DATA,
                          "data is a %s: it must be a (pointer, readonly) tuple, an object "
                          "exporting the buffer protocol, or None",
                          Py_TYPE(data)->tp_name);
        } else if (st->describable) {
            st->have_address =
                ic_ai_buffer_data(data, "a buffer exporter", st->offset, st->lo, st->hi, st->diag,
                                  &st->address, &st->view.readonly);
        }
    } else if (st->owner && st->describable) {
        st->have_address =
            ic_ai_buffer_data(st->owner, "None (the object's own buffer)", st->offset, st->lo,
                              st->hi, st->diag, &st->address, &st->view.readonly);
    } else if (!st->owner) {
        st->describable = false; /* data lives in an object the caller did not name */
    }
    if (st->have_address && st->address == 0 && st->nbytes > 0) {
        ic_diag_error(st->diag, IC_AI_RULE_DATA,
                      "the data pointer is 0 for %lld bytes: only an empty array may have no data",
                      (long long)st->nbytes);
        st->have_address = false;
    }
    if (!st->have_address)
        st->describable = false;
}

/* The pointer is the producer's word alone: every element must be there before anyone
 * reads one. False, with the finding written, when they are not. */
static bool ic_ai_check_readable(struct ic_ai_check_state *st)
{
    char why[200];

    st->view.data = st->address;
    int rc = ic_view_check_readable(&st->view, why, sizeof(why));
    if (rc == IC_EFAULT) {
        ic_diag_error(st->diag, IC_AI_RULE_DATA, "data 0x%llx: %s", (unsigned long long)st->address,
                      why);
        return false;
    }
    if (rc < 0)
        ic_diag_warn(st->diag, IC_AI_RULE_DATA, "%s", why);
    return true;
}

static int ic_ai_check(PyObject *value, PyObject *owner, int depth, struct ic_diag *diag,
                       struct ic_view *ret_view, bool *ret_have_view)
{
    struct ic_ai_check_state st;

    *ret_have_view = false;
    memset(&st, 0, sizeof(st));
    st.owner = owner;
    st.diag = diag;
    st.describable = true;
    st.view.device_type = IC_DEVICE_CPU;
    st.view.readonly_known = true;
    if (!PyDict_Check(value)) {
        ic_diag_error(diag, IC_AI_RULE_DICT, "__array_interface__ is a %s, not a dict",
                      Py_TYPE(value)->tp_name);
        return 0;
    }
    ic_ai_lookup_keys(&st, value);
    ic_ai_check_required_keys(&st);
    ic_ai_check_typestr(&st);
    ic_ai_check_descr(&st);
    ic_ai_check_shape(&st);
    ic_ai_check_strides(&st);
    ic_ai_check_offset(&st);
    ic_ai_check_data(&st);

    /* 4.5.5 */
    if (st.mask && st.mask != Py_None)
        ic_ai_check_mask(st.mask, &st.view, st.shape_known, depth, diag);

    if (!st.describable || !ic_ai_check_readable(&st))
        return 0;
    st.view.dtype = st.typestr.dtype;
    *ret_view = st.view;
    *ret_have_view = true;
    return 0;
}

int ic_array_interface_check(PyObject *value, PyObject *owner, struct ic_diag *diag,
                             struct ic_view *ret_view, bool *ret_have_view)
{
    if (!value || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    return ic_ai_check(value, owner, 0, diag, ret_view, ret_have_view);
}

/* ---------------------------------------------------------------------------------------
 * Ops
 */

static void ic_ai_describe(PyObject *value, char *buf, size_t size)
{
    char typestr[32] = "?", data_kind[16] = "none";
    if (PyDict_Check(value)) {
        PyObject *typestr_obj = PyDict_GetItemString(value, "typestr"); /* borrowed */
        PyObject *data = PyDict_GetItemString(value, "data");
        if (typestr_obj && ic_py_str_copy(typestr_obj, typestr, sizeof(typestr)) < 0)
            snprintf(typestr, sizeof(typestr), "?");
        if (data && PyTuple_Check(data))
            snprintf(data_kind, sizeof(data_kind), "tuple");
        else if (data && data != Py_None)
            snprintf(data_kind, sizeof(data_kind), "buffer");
    }
    snprintf(buf, size, "__array_interface__ typestr=%s data=%s", typestr, data_kind);
}

/* Validates one read of the attribute into the record. */
static void ic_ai_record(PyObject *value, PyObject *owner, struct ic_export_record *rec)
{
    struct ic_export_reading r;
    ic_export_reading_init(&r);
    ic_array_interface_check(value, owner, &r.diag, &r.view, &r.have_view);
    ic_ai_describe(value, r.detail, sizeof(r.detail));
    ic_export_keep(rec, &r);
    rec->zero_copy_known = true; /* the dict points at the producer's memory */
}

IC_ATTRIBUTE_PROTOCOL(ic_ai, "__array_interface__", "interopcheck.ArrayInterfaceProxy",
                      ic_ai_record)

const struct ic_protocol_ops ic_array_interface_ops = {
    .protocol = IC_PROTOCOL_ARRAY_INTERFACE,
    .facts = {.readonly_rule = IC_RULE_ARRAY_INTERFACE_READONLY,
              .memory_rule = IC_RULE_ARRAY_INTERFACE_DATA,
              .dtype_names = IC_NAMES_TYPESTR},
    .proxy_new = ic_ai_proxy_new,
    .reference_consume = ic_ai_reference_consume,
};
