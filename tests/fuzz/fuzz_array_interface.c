/* fuzz_array_interface: the __array_interface__ validator (ic_array_interface_check,
 * src/protocols/ic_array_interface.c) on values decoded from the input as a Python literal
 * (fuzz_common.h), usually a dict such as
 *   {'shape': (2, 3), 'typestr': '<f4', 'data': (4096, False), 'version': 3}
 * whose data may also be a buffer exporter (b'...', {'$bytearray': b'...'},
 * {'$memoryview': b'...'}) or None, with masks spelled {'$ai': {...}}. The key '$owner' is
 * taken out of the dict before the check and names the object the attribute was read from
 * (the buffer that data None refers to): {'$owner': None} passes no owner; without the key
 * the owner is a 64-byte bytearray.
 *
 * Besides memory safety the harness checks the contract: no exception is left pending, the
 * dict is not changed, buffer data is never reported unreadable, and a view has a sane rank,
 * shape and itemsize. The validator reads elements only through the guard (ic_guard.h): a
 * made-up pointer is safe. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fuzz_common.h"
#include "ic_array_interface.h"
#include "ic_error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static PyObject *default_owner; /* a 64-byte bytearray */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_python_start();
    default_owner = PyByteArray_FromStringAndSize(NULL, 64);
    FUZZ_CHECK(default_owner != NULL);
    return 0;
}

/* Whether the dict's data pointer, or a mask's, lies in ASan's shadow (fuzz_common.h). */
static bool data_in_shadow(PyObject *value, int depth)
{
    if (depth > 8 || !PyDict_Check(value))
        return false;
    PyObject *data = PyDict_GetItemString(value, "data"); /* borrowed */
    if (data && PyTuple_Check(data) && PyTuple_GET_SIZE(data) > 0 &&
        PyLong_Check(PyTuple_GET_ITEM(data, 0))) {
        unsigned long long address = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
        if (PyErr_Occurred())
            PyErr_Clear();
        else if (fuzz_in_asan_shadow(address))
            return true;
    }
    PyObject *mask = PyDict_GetItemString(value, "mask");
    if (!mask || mask == Py_None)
        return false;
    PyObject *inner = PyObject_GetAttrString(mask, "__array_interface__");
    if (!inner) {
        PyErr_Clear();
        return false;
    }
    bool found = data_in_shadow(inner, depth + 1);
    Py_DECREF(inner);
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *value = fuzz_py_object(data, size);
    if (!value)
        return 0;
    if (data_in_shadow(value, 0)) {
        Py_DECREF(value);
        return 0;
    }
    PyObject *owner = default_owner;
    Py_INCREF(owner);
    if (PyDict_Check(value)) {
        PyObject *given = PyDict_GetItemString(value, "$owner"); /* borrowed */
        if (given) {
            Py_SETREF(owner, given == Py_None ? NULL : Py_NewRef(given));
            FUZZ_CHECK(PyDict_DelItemString(value, "$owner") == 0);
        }
    }
    PyObject *before = PyDict_Check(value) ? PyDict_Copy(value) : NULL;

    struct fuzz_validation v;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_array_interface_check(value, owner, &v.diag, &v.view, &v.have_view) == 0);
    fuzz_validation_check(&v, "ic_array_interface_check");
    if (before) {
        /* Data in a buffer (an exporter, or the owner's for None) is readable memory: only a
         * (pointer, readonly) tuple, the dict's or a mask's, can point where nothing is. */
        PyObject *data_obj = PyDict_GetItemString(before, "data"); /* borrowed */
        PyObject *mask = PyDict_GetItemString(before, "mask");
        if ((!data_obj || !PyTuple_Check(data_obj)) && (!mask || mask == Py_None))
            FUZZ_CHECK(fuzz_guard_faults() == 0);
    }
    fuzz_check_unchanged(before, value);
    if (v.have_view) {
        FUZZ_CHECK(PyDict_Check(value));
        FUZZ_CHECK(v.view.ndim >= 0 && v.view.ndim <= IC_MAX_NDIM && v.view.itemsize >= 0);
        FUZZ_CHECK(v.view.device_type == IC_DEVICE_CPU && v.view.readonly_known);
        fuzz_check_view_items(&v.view);
    }
    Py_XDECREF(before);
    Py_XDECREF(owner);
    Py_DECREF(value);
    return 0;
}
