/* Unit tests of ic_array_struct: the validator on PyArrayInterface capsules built here, one
 * broken rule at a time, then NumPy's own capsules (NumPy is imported by the test only, as a
 * real producer) and the proxy and reference consumer. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#include <sys/mman.h>

#include "ic_array_struct.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

static float data[8];
static Py_ssize_t shape23[2] = {2, 3}, c_strides[2] = {12, 4}, f_strides[2] = {4, 8};

static struct ic_pyarrayinterface good_struct(void)
{
    struct ic_pyarrayinterface s = {
        .two = 2,
        .nd = 2,
        .typekind = 'f',
        .itemsize = 4,
        .flags = IC_ARR_C_CONTIGUOUS | IC_ARR_ALIGNED | IC_ARR_NOTSWAPPED | IC_ARR_WRITEABLE,
        .shape = shape23,
        .strides = c_strides,
        .data = data,
        .descr = NULL,
    };
    return s;
}

struct checked {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
};

/* Wraps `s` in an unnamed capsule (or one named `name`) and checks it. */
static struct checked check_struct(struct ic_pyarrayinterface s, const char *name)
{
    struct checked out;
    PyObject *capsule = PyCapsule_New(&s, name, NULL);
    ic_diag_init(&out.diag);
    out.have_view = false;
    ic_array_struct_check(capsule, &out.diag, &out.view, &out.have_view);
    Py_DECREF(capsule);
    return out;
}

/* The good struct's check with the flags `set` set and the flags `unset` cleared. */
static struct checked check_flags(int set, int unset)
{
    struct ic_pyarrayinterface s = good_struct();
    s.flags = (s.flags | set) & ~unset;
    return check_struct(s, NULL);
}

#define RULE IC_RULE_ARRAY_STRUCT_STRUCT

/* Checks `s`, the good struct with a field broken: an error, and no view. */
static void check_rejected(struct ic_pyarrayinterface s, const char *what)
{
    struct checked c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE) && !c.have_view, "%s", what);
}

static void test_rules(void)
{
    struct checked c = check_struct(good_struct(), NULL);
    TAP_OK(c.diag.count == 0 && c.have_view, "a C-contiguous float32 struct is valid");
    TAP_OK(c.view.data == (uintptr_t)data && c.view.strides[0] == 12 &&
               c.view.dtype == IC_DTYPE_FLOAT32 && !c.view.readonly && c.view.readonly_known,
           "its view: float32, strides (12, 4), writable");

    struct ic_pyarrayinterface s = good_struct();
    s.strides = NULL;
    c = check_struct(s, NULL);
    TAP_OK(c.diag.count == 0 && c.view.strides[0] == 12, "strides NULL means C-contiguous");
    c = check_flags(0, IC_ARR_WRITEABLE);
    TAP_OK(c.diag.count == 0 && c.view.readonly, "without WRITEABLE the view is read-only");
    s = good_struct();
    s.nd = 0;
    s.shape = s.strides = NULL;
    s.flags |= IC_ARR_F_CONTIGUOUS;
    c = check_struct(s, NULL);
    TAP_OK(c.diag.count == 0 && c.view.ndim == 0, "a 0-d struct needs no shape");
    s = good_struct();
    s.strides = f_strides;
    s.flags = (s.flags & ~IC_ARR_C_CONTIGUOUS) | IC_ARR_F_CONTIGUOUS;
    c = check_struct(s, NULL);
    TAP_OK(c.diag.count == 0, "a Fortran struct with F_CONTIGUOUS is valid");

    PyObject *number = PyLong_FromLong(1);
    ic_diag_init(&c.diag);
    ic_array_struct_check(number, &c.diag, &c.view, &c.have_view);
    TAP_OK(has_error(&c.diag, RULE) && !c.have_view, "an int is no capsule");
    Py_DECREF(number);
    c = check_struct(good_struct(), "PyArrayInterface");
    TAP_OK(has_error(&c.diag, RULE), "a named capsule is an error");
    show_diag("named", &c.diag);
    s = good_struct();
    s.two = 3;
    check_rejected(s, "two == 3 is an error");
    s = good_struct();
    s.nd = -1;
    check_rejected(s, "nd -1 is an error");
    s = good_struct();
    s.shape = NULL;
    check_rejected(s, "nd 2 with shape NULL is an error");
    Py_ssize_t negative[2] = {2, -3};
    s = good_struct();
    s.shape = negative;
    check_rejected(s, "a negative extent is an error");
    s = good_struct();
    s.typekind = 'x';
    check_rejected(s, "typekind x is an error");
    s = good_struct();
    s.itemsize = 3;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE), "a 3-byte float is an error");
    s = good_struct();
    s.strides = f_strides;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE), "C_CONTIGUOUS with Fortran strides is an error");
    show_diag("C flag, F strides", &c.diag);
    c = check_flags(IC_ARR_F_CONTIGUOUS, 0);
    TAP_OK(has_error(&c.diag, RULE), "F_CONTIGUOUS with 2-d C strides is an error");
    c = check_flags(0, IC_ARR_C_CONTIGUOUS);
    TAP_OK(has_warning(&c.diag, RULE) && c.diag.errors == 0,
           "C-contiguous strides without the flag are a warning");
    c = check_flags(0, IC_ARR_NOTSWAPPED);
    TAP_OK(has_warning(&c.diag, RULE) && c.diag.errors == 0 && c.view.dtype == IC_DTYPE_INVALID,
           "no NOTSWAPPED: declared byte-swapped, a warning and no dtype");
    c = check_flags(IC_ARR_HAS_DESCR, 0);
    TAP_OK(has_error(&c.diag, RULE), "ARR_HAS_DESCR with descr NULL is an error");
    s = good_struct();
    s.descr = Py_None;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE), "a descr without ARR_HAS_DESCR is an error");
    s = good_struct();
    s.data = (char *)data + 1;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE), "ALIGNED with a misaligned pointer is an error");
    s = good_struct();
    s.data = NULL;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE) && !c.have_view, "data NULL with 6 elements is an error");
    Py_ssize_t far[2] = {PY_SSIZE_T_MAX, 4};
    s = good_struct();
    s.strides = far;
    s.flags &= ~IC_ARR_C_CONTIGUOUS;
    c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, RULE) && !c.have_view, "an overflowing span is an error");
}

/* ---------------------------------------------------------------------------------------
 * NumPy as a real producer, the proxy and the reference consumer
 */

static const char producers_code[] = "import numpy as np\n"
                                     "class Holder:\n"
                                     "    def __init__(self, a):\n"
                                     "        self.a = a\n"
                                     "    @property\n"
                                     "    def __array_struct__(self):\n"
                                     "        return self.a.__array_struct__\n"
                                     "c_order = np.arange(6, dtype=np.float32).reshape(2, 3)\n"
                                     "sliced = np.arange(12.0).reshape(3, 4)[:, ::2]\n"
                                     "fortran = np.arange(12.0).reshape(3, 4).T\n"
                                     "swapped = np.arange(3, dtype='>i4')\n"
                                     "readonly = np.arange(3.0)\n"
                                     "readonly.flags.writeable = False\n"
                                     "record = np.zeros(3, dtype=[('x', '<i4'), ('y', '<f8')])\n";

static struct checked check_numpy(const char *name)
{
    struct checked out;
    PyObject *array = PyDict_GetItemString(test_producers, name); /* borrowed */
    PyObject *capsule = PyObject_GetAttrString(array, "__array_struct__");
    ic_diag_init(&out.diag);
    out.have_view = false;
    ic_array_struct_check(capsule, &out.diag, &out.view, &out.have_view);
    Py_XDECREF(capsule);
    return out;
}

static void test_numpy(void)
{
    if (test_python_define(producers_code) < 0) {
        PyErr_Clear();
        TAP_DIAG("numpy is not importable: NumPy producer tests skipped");
        return;
    }

    struct checked c = check_numpy("c_order");
    TAP_OK(c.diag.count == 0 && c.view.dtype == IC_DTYPE_FLOAT32 && c.view.ndim == 2,
           "numpy: a C-order float32 array is valid");
    c = check_numpy("sliced");
    TAP_OK(c.diag.count == 0 && c.view.strides[1] == 16, "numpy: a strided slice is valid");
    c = check_numpy("fortran");
    TAP_OK(c.diag.count == 0 && c.view.strides[0] == 8, "numpy: a transposed array is valid");
    c = check_numpy("swapped");
    TAP_OK(c.diag.errors == 0 && has_warning(&c.diag, RULE) && c.view.dtype == IC_DTYPE_INVALID,
           "numpy: a big-endian array is declared swapped (warning, no dtype)");
    c = check_numpy("readonly");
    TAP_OK(c.diag.count == 0 && c.view.readonly, "numpy: a read-only array lacks WRITEABLE");
    c = check_numpy("record");
    show_diag("numpy structured array (NumPy writes flags &= ARR_HAS_DESCR)", &c.diag);

    struct ic_export_record rec;
    PyObject *target = producer_eval("Holder(c_order)");
    PyObject *proxy = proxy_open(&ic_array_struct_ops, target, &rec);
    PyObject *capsule = PyObject_GetAttrString(proxy, "__array_struct__");
    TAP_OK(capsule && PyCapsule_CheckExact(capsule) && rec.export_calls == 1 && rec.have_view &&
               rec.diag.count == 0 && rec.zero_copy_known,
           "proxy: the capsule passes through and is recorded (%s)", rec.detail);
    TAP_OK(!PyObject_HasAttrString(proxy, "__array_interface__") && !PyObject_CheckBuffer(proxy),
           "proxy: nothing else is offered");
    Py_XDECREF(capsule);
    proxy_close(proxy);

    PyObject *handle = NULL;
    TAP_OK(reference_import(&ic_array_struct_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               handle && PyCapsule_CheckExact(handle) && rec.have_view && rec.diag.count == 0,
           "reference consumer: the handle is the capsule");
    Py_XDECREF(handle);
    Py_DECREF(target);

    target = producer_eval("Holder(None)");
    TAP_OK(reference_import(&ic_array_struct_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               !handle && rec.producer_raised &&
               strcmp(rec.producer_exc_type, "AttributeError") == 0 && !PyErr_Occurred(),
           "reference consumer: a producer's AttributeError is recorded");
    Py_DECREF(target);

    TAP_OK(ops_registered(IC_PROTOCOL_ARRAY_STRUCT, &ic_array_struct_ops),
           "the ops are registered under their id");
}

/* Checks `s`, which points at memory that is not there: array_struct.memory, and no view. */
static struct checked check_unmapped(struct ic_pyarrayinterface s, const char *what)
{
    struct checked c = check_struct(s, NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_STRUCT_MEMORY) && !c.have_view, "%s", what);
    return c;
}

/* A producer that points at memory that is not there: array_struct.memory, and no view. */
static void test_guarded(void)
{
    size_t page;
    unsigned char *base = page_before_hole(&page);
    void *hole = base + page;

    struct checked c;
    PyObject *capsule = PyCapsule_New(hole, NULL, NULL);
    ic_diag_init(&c.diag);
    c.have_view = false;
    ic_array_struct_check(capsule, &c.diag, &c.view, &c.have_view);
    Py_DECREF(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_STRUCT_MEMORY) && !c.have_view,
           "a capsule pointing at an unmapped page is array_struct.memory");
    show_diag("unmapped struct", &c.diag);

    struct ic_pyarrayinterface s = good_struct();
    s.shape = hole;
    check_unmapped(s, "a shape array in an unmapped page is array_struct.memory");
    s = good_struct();
    s.strides = (Py_ssize_t *)hole - 1; /* strides[1] in the hole */
    check_unmapped(s, "a strides array running into an unmapped page is array_struct.memory");
    s = good_struct();
    s.data = hole;
    c = check_unmapped(s, "data in an unmapped page is array_struct.memory");
    show_diag("unmapped data", &c.diag);
    s.data = (char *)hole - 8; /* 2 of the 6 floats mapped */
    check_unmapped(s, "elements that run past the mapped memory are array_struct.memory");
    munmap(base, page);
}

int main(void)
{
    return test_python_main(NULL, TAP_TESTS(test_rules, test_guarded, test_numpy));
}
