/* fuzz_cai: the __cuda_array_interface__ validator (ic_cai_check, src/protocols/ic_cai.c) on values
 * decoded from the input as a Python literal (fuzz_common.h): usually a dict such as
 *   {'shape': (2, 3), 'typestr': '<f4', 'data': (4096, False), 'version': 3, 'stream': 1}
 * with masks spelled {'$cai': {...}}, and {'$raise': 0}, {'$notruth': 0}, {'$index': 5} for
 * objects that misbehave. Nothing here touches a GPU: the validator never dereferences data.
 *
 * Besides memory safety the harness checks the contract: no exception is left pending, the
 * dict is not changed, no memory is read (so none is reported unreadable), a view has a sane
 * rank and shape, and a stream is reported only when it is valid (1, 2 or a positive handle)
 * and the version hands streams over. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fuzz_common.h"
#include "ic_cai.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_PYTHON_HARNESS()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *value = fuzz_py_object(data, size);
    if (!value)
        return 0;
    PyObject *before = PyDict_Check(value) ? PyDict_Copy(value) : NULL;

    struct fuzz_validation v;
    struct ic_cai_info info;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_cai_check(value, &v.diag, &v.view, &v.have_view, &info) == 0);
    fuzz_validation_check(&v, "ic_cai_check");
    FUZZ_CHECK(fuzz_guard_calls() == 0); /* device memory is never read */
    fuzz_check_unchanged(before, value);
    if (v.have_view) {
        FUZZ_CHECK(PyDict_Check(value));
        FUZZ_CHECK(v.view.ndim >= 0 && v.view.ndim <= IC_MAX_NDIM && v.view.itemsize > 0);
        FUZZ_CHECK(v.view.device_type == IC_DEVICE_CUDA && v.view.readonly_known);
        for (int i = 0; i < v.view.ndim; i++)
            FUZZ_CHECK(v.view.shape[i] >= 0);
    }
    if (info.has_stream) {
        FUZZ_CHECK(info.stream_applies && info.stream > 0);
    } else {
        FUZZ_CHECK(info.stream == 0);
    }
    FUZZ_CHECK(!info.have_version || info.version >= 0);
    Py_XDECREF(before);
    Py_DECREF(value);
    return 0;
}
