/* Unit tests of ic_array_method: the ndarray test by MRO, the result check, and the proxy
 * and reference consumer against Python-defined producers. A real ndarray needs NumPy, so
 * this test (not the module) imports it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#include <sys/mman.h>

#include "ic_array_method.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "ic_proxy.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

static const char producers_code[] =
    "import numpy as np\n"
    "class Good:\n"
    "    def __init__(self):\n"
    "        self.a = np.arange(6, dtype=np.float32).reshape(2, 3)\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        return self.a.copy() if copy else self.a\n"
    "class Refuses:\n"
    "    '''Must always copy, and says so the NumPy 2 way.'''\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        if copy is False:\n"
    "            raise ValueError('a copy is needed')\n"
    "        return np.arange(3.0)\n"
    "class WrongRefusal:\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        if copy is False:\n"
    "            raise RuntimeError('cannot share')\n"
    "        return np.arange(3.0)\n"
    "class Old:\n"
    "    def __array__(self, dtype=None):\n"
    "        return np.arange(3.0)\n"
    "class NotArray:\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        return [1.0, 2.0, 3.0]\n"
    "class Sub(np.ndarray):\n"
    "    pass\n"
    "class Subclass:\n"
    "    def __array__(self, dtype=None, copy=None):\n"
    "        return np.arange(3.0).view(Sub)\n";

static void test_result_check(void)
{
    PyObject *array = producer_eval("np.arange(4, dtype=np.int16)"),
             *sub = producer_eval("Subclass().__array__()");
    PyObject *list = producer_eval("[1, 2]"), *scalar = producer_eval("np.float64(1.0)");
    TAP_OK(ic_array_method_is_ndarray(array), "an ndarray is an ndarray");
    TAP_OK(ic_array_method_is_ndarray(sub), "a subclass instance is an ndarray");
    TAP_OK(!ic_array_method_is_ndarray(list) && !ic_array_method_is_ndarray(scalar),
           "a list and a NumPy scalar are not");

    struct ic_diag diag;
    struct ic_view view;
    bool have_view = false;
    ic_diag_init(&diag);
    ic_array_method_check_result(array, &diag, &view, &have_view);
    TAP_OK(diag.count == 0 && have_view && view.dtype == IC_DTYPE_INT16 && view.shape[0] == 4 &&
               !view.readonly,
           "an int16 ndarray is read through its buffer");
    ic_diag_init(&diag);
    ic_array_method_check_result(list, &diag, &view, &have_view);
    TAP_OK(has_error(&diag, IC_RULE_ARRAY_RETURNS_NDARRAY) && !have_view,
           "a list result is an error");

    /* An ndarray a producer built over a page that is gone: its memory is never read. */
    size_t page;
    unsigned char *base = page_before_hole(&page), *hole = base + page;
    char expression[200];
    snprintf(expression, sizeof(expression),
             "np.ctypeslib.as_array((__import__('ctypes').c_int16 * 4).from_address(%llu))",
             (unsigned long long)(uintptr_t)hole);
    PyObject *lost = producer_eval(expression);
    ic_diag_init(&diag);
    ic_array_method_check_result(lost, &diag, &view, &have_view);
    TAP_OK(has_error(&diag, IC_RULE_EXCHANGE_CONTENTS) && !have_view &&
               diag.items[0].side == IC_SIDE_PRODUCER,
           "an ndarray over unmapped memory is exchange.contents, the producer's");
    Py_DECREF(lost);
    munmap(base, page);
    Py_DECREF(array);
    Py_DECREF(sub);
    Py_DECREF(list);
    Py_DECREF(scalar);
}

/* Calls obj.__array__(*args, **kwargs) through a proxy; returns the result (or NULL with
 * the exception fetched into *exc). */
static PyObject *call_array(PyObject *proxy, PyObject *args, PyObject *kwargs,
                            struct ic_py_exc *exc)
{
    PyObject *method = PyObject_GetAttrString(proxy, "__array__"), *no_args = PyTuple_New(0);
    PyObject *result = PyObject_Call(method, args ? args : no_args, kwargs);
    if (!result)
        ic_py_fetch(exc);
    Py_DECREF(method);
    Py_DECREF(no_args);
    return result;
}

/* One __array__(**kwargs) call through a fresh proxy of the producer `expression`, recorded in
 * *rec; returns the result (or NULL with the exception fetched into *exc). */
static PyObject *call_once(const char *expression, PyObject *kwargs, struct ic_export_record *rec,
                           struct ic_py_exc *exc)
{
    PyObject *target = producer_eval(expression);
    PyObject *proxy = proxy_open(&ic_array_method_ops, target, rec);
    PyObject *result = call_array(proxy, NULL, kwargs, exc);
    proxy_close(proxy);
    Py_DECREF(target);
    return result;
}

static void test_proxy(void)
{
    struct ic_export_record rec;
    struct ic_py_exc exc;
    PyObject *target = producer_eval("Good()");
    PyObject *array = PyObject_GetAttrString(target, "a");
    PyObject *kwargs = NULL, *result = NULL;

    PyObject *proxy = proxy_open(&ic_array_method_ops, target, &rec);
    result = call_array(proxy, NULL, NULL, &exc);
    TAP_OK(result == array && strcmp(rec.request, "__array__()") == 0 && rec.have_view &&
               rec.diag.count == 0 && !rec.zero_copy_known,
           "proxy: __array__() returns the producer's array and records it (%s)", rec.detail);
    TAP_OK(((struct ic_proxy *)proxy)->last_export == result, "proxy: the array is kept alive");
    Py_XDECREF(result);
    kwargs = Py_BuildValue("{s:O}", "copy", Py_True);
    result = call_array(proxy, NULL, kwargs, &exc);
    TAP_OK(result && result != array && rec.copy_expected &&
               strcmp(rec.request, "__array__(copy=True)") == 0,
           "proxy: copy=True is forwarded and expects a copy");
    Py_XDECREF(result);
    Py_DECREF(kwargs);
    PyObject *args = Py_BuildValue("(O)", Py_None);
    kwargs = Py_BuildValue("{s:O}", "copy", Py_False);
    result = call_array(proxy, args, kwargs, &exc);
    TAP_OK(result == array && rec.no_copy_required &&
               strcmp(rec.request, "__array__(None, copy=False)") == 0,
           "proxy: a positional dtype and copy=False are forwarded (%s)", rec.request);
    Py_XDECREF(result);
    Py_DECREF(args);
    TAP_OK(rec.export_calls == 3 && rec.diag.errors == 0, "proxy: three calls, no finding");
    proxy_close(proxy);

    /* NumPy itself as the consumer of the proxy */
    proxy = proxy_open(&ic_array_method_ops, target, &rec);
    PyDict_SetItemString(test_producers, "proxy", proxy);
    PyObject *imported = producer_eval("np.asarray(proxy)");
    TAP_OK(imported == array && rec.export_calls >= 1 && rec.have_view,
           "numpy.asarray consumes the proxy and shares the array (request %s)", rec.request);
    Py_XDECREF(imported);
    PyDict_DelItemString(test_producers, "proxy");
    proxy_close(proxy);
    Py_DECREF(array);
    Py_DECREF(target);

    /* kwargs is still copy=False */
    result = call_once("Refuses()", kwargs, &rec, &exc);
    TAP_OK(!result && exc.value_error && rec.producer_raised && rec.diag.count == 0 &&
               rec.no_copy_required,
           "proxy: a ValueError for copy=False is the allowed refusal and reaches the consumer");
    result = call_once("WrongRefusal()", kwargs, &rec, &exc);
    TAP_OK(!result && strcmp(exc.type, "RuntimeError") == 0 &&
               has_error(&rec.diag, IC_RULE_ARRAY_NO_COPY_ERROR),
           "proxy: a RuntimeError for copy=False is an error");
    result = call_once("Old()", kwargs, &rec, &exc);
    TAP_OK(!result && exc.type_error && has_warning(&rec.diag, IC_RULE_ARRAY_COPY_KEYWORD) &&
               rec.diag.errors == 0,
           "proxy: an __array__ without copy is the old signature (warning)");
    Py_DECREF(kwargs);

    result = call_once("NotArray()", NULL, &rec, &exc);
    TAP_OK(result && PyList_Check(result) && has_error(&rec.diag, IC_RULE_ARRAY_RETURNS_NDARRAY) &&
               !rec.have_view,
           "proxy: a list result passes through and is an error");
    Py_XDECREF(result);
}

struct consumed {
    struct ic_export_record rec;
    int rc;
    bool handle_is_array;
};

static struct consumed consume(const char *expression, enum ic_variant variant)
{
    struct consumed out;
    PyObject *target = producer_eval(expression), *handle = NULL;
    out.rc = reference_import(&ic_array_method_ops, target, variant, &out.rec, &handle);
    out.handle_is_array = handle && ic_array_method_is_ndarray(handle);
    TAP_OK(!PyErr_Occurred(), "%s leaves no exception pending", expression);
    Py_XDECREF(handle);
    Py_DECREF(target);
    return out;
}

static void test_reference_consumer(void)
{
    struct consumed c = consume("Good()", IC_VARIANT_NONE);
    TAP_OK(c.rc == 0 && c.handle_is_array && c.rec.diag.count == 0 &&
               strcmp(c.rec.request, "__array__()") == 0 && c.rec.view.dtype == IC_DTYPE_FLOAT32,
           "plain: __array__() gives a float32 ndarray");
    c = consume("Good()", IC_VARIANT_ARR_COPY);
    TAP_OK(c.handle_is_array && c.rec.copy_expected &&
               strcmp(c.rec.request, "__array__(copy=True)") == 0,
           "copy: __array__(copy=True) expects a copy");
    c = consume("Good()", IC_VARIANT_ARR_NO_COPY);
    TAP_OK(c.handle_is_array && c.rec.no_copy_required && c.rec.diag.count == 0,
           "no_copy: a shared array answers copy=False");
    c = consume("Refuses()", IC_VARIANT_ARR_NO_COPY);
    TAP_OK(!c.handle_is_array && c.rec.producer_raised && c.rec.diag.count == 0 &&
               strcmp(c.rec.producer_exc_type, "ValueError") == 0,
           "no_copy: a ValueError refusal is allowed");
    c = consume("WrongRefusal()", IC_VARIANT_ARR_NO_COPY);
    TAP_OK(c.rec.producer_raised && has_error(&c.rec.diag, IC_RULE_ARRAY_NO_COPY_ERROR),
           "no_copy: a RuntimeError refusal is an error");
    c = consume("Old()", IC_VARIANT_ARR_COPY);
    TAP_OK(c.rec.producer_raised && has_warning(&c.rec.diag, IC_RULE_ARRAY_COPY_KEYWORD),
           "copy: the old signature is a warning");
    c = consume("NotArray()", IC_VARIANT_NONE);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_ARRAY_RETURNS_NDARRAY) && !c.handle_is_array,
           "plain: a list result is an error");
    c = consume("Good()", IC_VARIANT_READONLY);
    TAP_OK(c.handle_is_array && strcmp(c.rec.request, "__array__()") == 0,
           "readonly: asked as the plain case");

    TAP_OK(ops_registered(IC_PROTOCOL_ARRAY_METHOD, &ic_array_method_ops),
           "the ops are registered under their id");
}

int main(void)
{
    if (test_python_start() < 0)
        return 1;
    if (test_python_define(producers_code) < 0) {
        PyErr_Clear();
        printf("1..0 # SKIP numpy is not importable\n");
        test_python_stop();
        return 0;
    }
    test_result_check();
    test_proxy();
    test_reference_consumer();
    test_python_stop();
    return tap_done();
}
