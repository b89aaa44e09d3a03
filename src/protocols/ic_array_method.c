#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_array_method.h"

#include <stdio.h>
#include <string.h>

#include "ic_array_interface.h"
#include "ic_buffer.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_proxy.h"
#include "ic_python.h"

bool ic_array_method_is_ndarray(PyObject *obj)
{
    if (!obj)
        return false;
    PyObject *mro = Py_TYPE(obj)->tp_mro; /* borrowed; a tuple of types once the type is ready */
    if (!mro || !PyTuple_Check(mro))
        return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        /* ndarray is a static type: its tp_name carries the module */
        if (strcmp(type->tp_name, "numpy.ndarray") == 0)
            return true;
    }
    return false;
}

/* dict["typestr"] = text; 0, or -1 with no exception left set. */
static int ic_am_set_typestr(PyObject *dict, const char *text)
{
    PyObject *value = PyUnicode_FromString(text);
    int rc = value ? PyDict_SetItemString(dict, "typestr", value) : -1;
    Py_XDECREF(value);
    if (rc < 0)
        PyErr_Clear();
    return rc;
}

/* An ndarray's elements through its __array_interface__, typed by its dtype's name. NumPy is
 * not the library under test here, so its interface's own findings are not reported; its
 * typestr is read as raw elements of the dtype's size (a dtype of another package may have
 * none that says what it is: ml_dtypes' float8_e5m2 writes "<f1"). */
static int ic_array_method_locate(PyObject *array, struct ic_view *ret_view, bool *ret_have_view)
{
    PyObject *given = PyObject_GetAttrString(array, "__array_interface__");
    PyObject *dtype = PyObject_GetAttrString(array, "dtype");
    PyObject *name = dtype ? PyObject_GetAttrString(dtype, "name") : NULL;
    PyObject *interface = given && PyDict_Check(given) ? PyDict_Copy(given) : NULL;
    struct ic_diag ignored;
    char text[32], raw[16];
    enum ic_dtype value;
    int rc = IC_EINVAL;

    ic_diag_init(&ignored);
    if (interface && name && ic_py_str_copy(name, text, sizeof(text)) == 0 &&
        ic_dtype_from_name(text, &value) == 0 &&
        snprintf(raw, sizeof(raw), "|V%d", ic_dtype_info(value)->itemsize) > 0 &&
        ic_am_set_typestr(interface, raw) == 0 &&
        ic_array_interface_check(interface, array, &ignored, ret_view, ret_have_view) == 0 &&
        *ret_have_view && ret_view->itemsize == ic_dtype_info(value)->itemsize) {
        ret_view->dtype = value;
        rc = 0;
    } else {
        *ret_have_view = false;
    }
    PyErr_Clear();
    Py_XDECREF(interface);
    Py_XDECREF(given);
    Py_XDECREF(dtype);
    Py_XDECREF(name);
    return rc;
}

int ic_array_method_check_result(PyObject *result, struct ic_diag *diag, struct ic_view *ret_view,
                                 bool *ret_have_view)
{
    Py_buffer buffer;
    struct ic_diag buffer_diag;
    struct ic_py_exc exc;

    if (!result || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    *ret_have_view = false;
    if (!ic_array_method_is_ndarray(result)) {
        ic_diag_error(diag, IC_RULE_ARRAY_RETURNS_NDARRAY,
                      "__array__ returned a %s, not a numpy.ndarray: NumPy rejects it (\"object "
                      "__array__ method not producing an array\")",
                      Py_TYPE(result)->tp_name);
        return 0;
    }
    memset(&buffer, 0, sizeof(buffer));
    if (PyObject_GetBuffer(result, &buffer, PyBUF_RECORDS_RO) < 0) {
        /* NumPy has no buffer format for dtypes of other packages (ml_dtypes' bfloat16): its
         * own __array_interface__ locates the elements, and the dtype's name says what they
         * are. */
        ic_py_fetch(&exc);
        if (ic_array_method_locate(result, ret_view, ret_have_view) < 0)
            ic_diag_warn(diag, IC_RULE_ARRAY_RETURNS_NDARRAY,
                         "the returned ndarray cannot be read through the buffer protocol (%s: "
                         "%s) nor its array interface: the tester has no view of it",
                         exc.type, exc.message);
        return 0;
    }
    /* NumPy is the exporter here, not the producer under test: its buffer findings are
     * not this protocol's. But an ndarray over memory that cannot be read (built by the
     * producer from a bad pointer) is the producer's doing. */
    ic_diag_init(&buffer_diag);
    ic_buffer_check(&buffer, PyBUF_RECORDS_RO, &buffer_diag, ret_view, ret_have_view);
    PyBuffer_Release(&buffer);
    const struct ic_diag_entry *unreadable = ic_diag_first_error(&buffer_diag);
    if (!*ret_have_view && unreadable && unreadable->rule == IC_RULE_BUFFER_FIELDS)
        ic_diag_add_side(diag, IC_SEV_ERROR, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_PRODUCER,
                         "__array__ returned an ndarray whose memory cannot be read: %s",
                         unreadable->message);
    return 0;
}

/* -1: copy absent or None, 0: copy=False, 1: copy=True. */
static int ic_am_copy_request(PyObject *kwargs, bool *ret_given)
{
    PyObject *copy = NULL; /* borrowed */
    if (kwargs && PyDict_Check(kwargs))
        copy = PyDict_GetItemString(kwargs, "copy");
    *ret_given = copy != NULL;
    if (!copy || copy == Py_None)
        return -1;
    int truth = PyObject_IsTrue(copy);
    if (truth < 0) {
        PyErr_Clear();
        return -1;
    }
    return truth;
}

/* A producer's exception, judged against the copy it was asked for. */
static void ic_am_check_refusal(int copy, bool copy_given, const struct ic_py_exc *exc,
                                struct ic_diag *diag)
{
    if (exc->type_error && copy_given && strstr(exc->message, "copy"))
        ic_diag_warn(diag, IC_RULE_ARRAY_COPY_KEYWORD,
                     "__array__ does not accept copy (%s: %s): the NumPy 1 signature; NumPy 2 "
                     "warns and retries without it",
                     exc->type, exc->message);
    else if (copy == 0 && !exc->value_error)
        ic_diag_error(diag, IC_RULE_ARRAY_NO_COPY_ERROR,
                      "copy=False was refused with %s (%s): NumPy 2 expects ValueError when a "
                      "copy cannot be avoided",
                      exc->type, exc->message);
}

static void ic_am_record(PyObject *result, int copy, struct ic_export_record *rec)
{
    struct ic_export_reading r;
    ic_export_reading_init(&r);
    ic_array_method_check_result(result, &r.diag, &r.view, &r.have_view);
    snprintf(r.detail, sizeof(r.detail), "__array__ -> %s", Py_TYPE(result)->tp_name);
    ic_export_keep(rec, &r);
    if (copy == 1)
        rec->copy_expected = true;
    if (copy == 0)
        rec->no_copy_required = true;
    rec->zero_copy_known = false; /* without copy=..., copying is the producer's choice */
}

static PyObject *ic_am_proxy_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    struct ic_py_exc exc;
    bool copy_given = false;
    int copy = ic_am_copy_request(kwargs, &copy_given);

    PyObject *result = ic_export_forward_call(proxy, "__array__", args, kwargs);
    if (!result) {
        if (rec && ic_py_peek(&exc)) {
            ic_am_check_refusal(copy, copy_given, &exc, &rec->diag);
            if (copy == 0)
                rec->no_copy_required = true;
        }
        return NULL; /* the producer's exception goes on to the consumer unchanged */
    }
    if (rec)
        ic_am_record(result, copy, rec);
    /* Keep the array: the recorded view points into it. */
    Py_XSETREF(proxy->last_export, Py_NewRef(result));
    return result;
}

IC_METHOD_PROTOCOL(ic_am, "__array__", ic_am_proxy_array, "interopcheck.ArrayMethodProxy")

static int ic_am_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                   PyObject **ret_handle)
{
    PyObject *method = NULL, *kwargs = NULL, *no_args = NULL, *result = NULL;
    struct ic_py_exc exc;
    int rc = 0;

    *ret_handle = NULL;
    no_args = PyTuple_New(0);
    kwargs = PyDict_New();
    if (!no_args || !kwargs) {
        PyErr_Clear();
        rc = IC_ENOMEM;
        goto cleanup;
    }
    if (rec->variant == IC_VARIANT_ARR_COPY || rec->variant == IC_VARIANT_ARR_NO_COPY) {
        PyObject *copy = rec->variant == IC_VARIANT_ARR_COPY ? Py_True : Py_False; /* immortal */
        if (PyDict_SetItemString(kwargs, "copy", copy) < 0) {
            PyErr_Clear();
            rc = IC_ENOMEM;
            goto cleanup;
        }
    }
    bool copy_given = false;
    int copy = ic_am_copy_request(kwargs, &copy_given);
    rec->export_calls++;
    ic_export_format_call("__array__", NULL, kwargs, rec->request, sizeof(rec->request));
    if (copy == 1)
        rec->copy_expected = true;
    if (copy == 0)
        rec->no_copy_required = true;
    method = PyObject_GetAttrString(export_obj, "__array__");
    if (method)
        result = PyObject_Call(method, no_args, kwargs);
    if (!result) {
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        ic_am_check_refusal(copy, copy_given, &exc, &rec->diag);
        goto cleanup;
    }
    ic_am_record(result, copy, rec);
    *ret_handle = result; /* the handle is the array: it keeps the memory alive */
    result = NULL;

cleanup:
    Py_XDECREF(method);
    Py_XDECREF(kwargs);
    Py_XDECREF(no_args);
    Py_XDECREF(result);
    return rc;
}

const struct ic_protocol_ops ic_array_method_ops = {
    .protocol = IC_PROTOCOL_ARRAY_METHOD,
    .facts = {.no_copy_rule = IC_RULE_ARRAY_NO_COPY,
              .readonly_rule = IC_RULE_ARRAY_READONLY,
              .memory_rule = IC_RULE_EXCHANGE_CONTENTS,
              .copy_rule = IC_RULE_ARRAY_COPY_TRUE},
    .proxy_new = ic_am_proxy_new,
    .reference_consume = ic_am_reference_consume,
};
