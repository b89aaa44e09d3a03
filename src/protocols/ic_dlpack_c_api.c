/*
 * The DLPack C exchange API (protocols.md §2.4), as interopcheck's own consumer meets it in
 * the dlpack protocol's c_api variant: the table a type publishes in
 * __dlpack_c_exchange_api__, an export through its managed_tensor_from_py_object_no_sync,
 * and that export's agreement with what __dlpack__ exports for the same array.
 *
 * The export is wrapped in a capsule of our own, named as a versioned DLPack capsule, and
 * taken through the same path as any capsule (validation, the deleter watch, the import
 * handle), so every tensor rule and the deleter count apply to it unchanged. The capsule's
 * destructor calls the deleter only while nobody took the capsule, as a producer's would.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <string.h>

#include "ic_dlpack.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_guard.h"

#if DLPACK_MAJOR_VERSION > 1 || (DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION >= 3)

#define IC_C_API_ATTR "__dlpack_c_exchange_api__"
#define IC_C_API_NAME "dlpack_exchange_api"

/* The table, read once through the guard. False (with the finding) when it is not one. */
static bool ic_c_api_table(PyObject *target, struct ic_export_record *rec, DLPackExchangeAPI *ret)
{
    PyObject *table = PyObject_GetAttrString((PyObject *)Py_TYPE(target), IC_C_API_ATTR);
    void *pointer = NULL;
    bool ok = false;
    if (!table) {
        PyErr_Clear();
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_TABLE,
                      "type(x) (%.80s) has no %s, though the probe says the library has the C "
                      "exchange API",
                      Py_TYPE(target)->tp_name, IC_C_API_ATTR);
        return false;
    }
    if (!PyCapsule_IsValid(table, IC_C_API_NAME)) {
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_TABLE,
                      "%s is a %.80s, not a PyCapsule named \"%s\"", IC_C_API_ATTR,
                      Py_TYPE(table)->tp_name, IC_C_API_NAME);
    } else if (!(pointer = PyCapsule_GetPointer(table, IC_C_API_NAME)) ||
               ic_guard_copy(ret, (uintptr_t)pointer, sizeof(*ret)) < 0) {
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_TABLE,
                      "the %s capsule's pointer (%p) is not readable memory of a "
                      "DLPackExchangeAPI",
                      IC_C_API_NAME, pointer);
    } else if (ret->header.version.major != DLPACK_MAJOR_VERSION) {
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_TABLE,
                      "the table's version is %u.%u: a consumer of DLPack %d must not use it",
                      ret->header.version.major, ret->header.version.minor, DLPACK_MAJOR_VERSION);
    } else if (!ret->managed_tensor_allocator || !ret->managed_tensor_from_py_object_no_sync ||
               !ret->managed_tensor_to_py_object_no_sync || !ret->current_work_stream) {
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_TABLE,
                      "the table leaves a required function NULL (allocator %s, "
                      "from_py_object %s, to_py_object %s, current_work_stream %s)",
                      ret->managed_tensor_allocator ? "set" : "NULL",
                      ret->managed_tensor_from_py_object_no_sync ? "set" : "NULL",
                      ret->managed_tensor_to_py_object_no_sync ? "set" : "NULL",
                      ret->current_work_stream ? "set" : "NULL");
    } else {
        ok = true;
    }
    PyErr_Clear();
    Py_DECREF(table);
    return ok;
}

/* A capsule nobody took calls the deleter; a taken one (renamed) is the taker's. */
static void ic_c_api_capsule_destructor(PyObject *capsule)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyCapsule_IsValid(capsule, IC_DLPACK_NAME_VERSIONED)) {
        DLManagedTensorVersioned *managed = PyCapsule_GetPointer(capsule, IC_DLPACK_NAME_VERSIONED);
        if (managed && managed->deleter)
            managed->deleter(managed);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

/* The tensor's fields, its shape and strides copied through the guard (NULL strides: the C
 * ones). False when they cannot be read. */
struct ic_c_api_tensor {
    DLTensor t;
    int64_t shape[IC_MAX_NDIM];
    int64_t strides[IC_MAX_NDIM];
};

static bool ic_c_api_read(const DLTensor *tensor, struct ic_c_api_tensor *ret)
{
    ret->t = *tensor;
    int n = tensor->ndim;
    if (n < 0 || n > IC_MAX_NDIM)
        return false;
    if (n > 0 && ic_guard_copy(ret->shape, (uintptr_t)tensor->shape, sizeof(int64_t) * n) < 0)
        return false;
    if (n > 0 && tensor->strides) {
        if (ic_guard_copy(ret->strides, (uintptr_t)tensor->strides, sizeof(int64_t) * n) < 0)
            return false;
    } else {
        int64_t stride = 1;
        for (int i = n - 1; i >= 0; i--) {
            ret->strides[i] = stride;
            stride *= ret->shape[i];
        }
    }
    return true;
}

/* The first field in which two readings of one array differ, or NULL. */
static const char *ic_c_api_difference(const struct ic_c_api_tensor *a,
                                       const struct ic_c_api_tensor *b)
{
    if ((uintptr_t)a->t.data + a->t.byte_offset != (uintptr_t)b->t.data + b->t.byte_offset)
        return "the first element's address";
    if (a->t.dtype.code != b->t.dtype.code || a->t.dtype.bits != b->t.dtype.bits ||
        a->t.dtype.lanes != b->t.dtype.lanes)
        return "the dtype";
    if (a->t.device.device_type != b->t.device.device_type ||
        a->t.device.device_id != b->t.device.device_id)
        return "the device";
    if (a->t.ndim != b->t.ndim)
        return "ndim";
    for (int i = 0; i < a->t.ndim; i++) {
        if (a->shape[i] != b->shape[i])
            return "the shape";
        if (a->shape[i] != 1 && a->strides[i] != b->strides[i])
            return "the strides";
    }
    return NULL;
}

/* What __dlpack__ exports for the same array, compared with the C API's export. */
static void ic_c_api_agreement(PyObject *target, const DLManagedTensorVersioned *managed,
                               struct ic_export_record *rec)
{
    PyObject *kwargs =
        Py_BuildValue("{s:(ii)}", "max_version", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
    PyObject *method = kwargs ? PyObject_GetAttrString(target, "__dlpack__") : NULL;
    PyObject *no_args = method ? PyTuple_New(0) : NULL;
    PyObject *capsule = NULL;
    struct ic_c_api_tensor ours, theirs;
    struct ic_py_exc exc;

    if (no_args) {
        ic_dlpack_producer_call_begin();
        capsule = PyObject_Call(method, no_args, kwargs);
        ic_dlpack_producer_call_end();
    }
    if (!capsule) {
        ic_py_fetch(&exc);
        ic_diag_warn(&rec->diag, IC_RULE_DLPACK_C_API_AGREES,
                     "__dlpack__ refused the array the C exchange API exported (%s: %s)", exc.type,
                     exc.message);
        goto done;
    }
    bool versioned = PyCapsule_IsValid(capsule, IC_DLPACK_NAME_VERSIONED);
    const char *name = versioned ? IC_DLPACK_NAME_VERSIONED : IC_DLPACK_NAME_LEGACY;
    void *pointer = PyCapsule_GetPointer(capsule, name);
    PyErr_Clear();
    DLTensor tensor;
    uintptr_t at = (uintptr_t)pointer + (versioned ? offsetof(DLManagedTensorVersioned, dl_tensor)
                                                   : offsetof(DLManagedTensor, dl_tensor));
    if (!pointer || ic_guard_copy(&tensor, at, sizeof(tensor)) < 0 ||
        !ic_c_api_read(&tensor, &theirs) || !ic_c_api_read(&managed->dl_tensor, &ours))
        goto done; /* the capsule's own rules judge an unreadable export elsewhere */
    const char *differs = ic_c_api_difference(&ours, &theirs);
    if (differs)
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_AGREES,
                      "the C exchange API and __dlpack__ export the same array, and they "
                      "differ in %s",
                      differs);
done:
    Py_XDECREF(capsule); /* not taken: its destructor calls the producer's deleter */
    Py_XDECREF(no_args);
    Py_XDECREF(method);
    Py_XDECREF(kwargs);
}

/* current_work_stream for the tensor's device must answer. */
static void ic_c_api_stream(const DLPackExchangeAPI *api, const DLManagedTensorVersioned *managed,
                            struct ic_export_record *rec)
{
    void *stream = NULL;
    DLDevice device = managed->dl_tensor.device;
    int rc = api->current_work_stream(device.device_type, device.device_id, &stream);
    if (rc != 0) {
        struct ic_py_exc exc = {0};
        ic_py_fetch(&exc);
        ic_diag_error(&rec->diag, IC_RULE_DLPACK_C_API_STREAM,
                      "current_work_stream(%d, %d) returned %d (%s: %s)", (int)device.device_type,
                      (int)device.device_id, rc, exc.type[0] ? exc.type : "no exception",
                      exc.message);
    }
}

int ic_dlpack_c_api_consume(PyObject *target, struct ic_export_record *rec, PyObject **ret_handle)
{
    DLPackExchangeAPI api;
    DLManagedTensorVersioned *managed = NULL;

    *ret_handle = NULL;
    snprintf(rec->request, sizeof(rec->request), "managed_tensor_from_py_object_no_sync(x)");
    if (!ic_c_api_table(target, rec, &api))
        return 0;
    rec->export_calls++;
    ic_dlpack_producer_call_begin();
    int rc = api.managed_tensor_from_py_object_no_sync(target, &managed);
    ic_dlpack_producer_call_end();
    if (rc != 0 || !managed) {
        struct ic_py_exc exc = {0};
        if (!ic_py_fetch(&exc))
            snprintf(exc.type, sizeof(exc.type), "no exception");
        ic_export_producer_raised(rec, &exc);
        return 0;
    }
    ic_c_api_stream(&api, managed, rec);
    ic_c_api_agreement(target, managed, rec);
    PyObject *capsule =
        PyCapsule_New(managed, IC_DLPACK_NAME_VERSIONED, ic_c_api_capsule_destructor);
    if (!capsule) {
        managed->deleter(managed);
        return IC_ENOMEM;
    }
    rc = ic_dlpack_take_capsule(capsule, rec, ret_handle);
    snprintf(rec->request, sizeof(rec->request), "managed_tensor_from_py_object_no_sync(x)");
    Py_DECREF(capsule);
    return rc;
}

#else /* a DLPack header before 1.3: no DLPackExchangeAPI to read the table with */

int ic_dlpack_c_api_consume(PyObject *target, struct ic_export_record *rec, PyObject **ret_handle)
{
    (void)target;
    (void)rec;
    *ret_handle = NULL;
    PyErr_SetString(PyExc_NotImplementedError,
                    "this interopcheck was built with a DLPack header older than 1.3, which "
                    "has no DLPackExchangeAPI");
    return IC_EPYTHON;
}

#endif
