#include "ic_proxy.h"

PyObject *ic_proxy_new(PyTypeObject *type, PyObject *target, struct ic_export_record *rec)
{
    struct ic_proxy *proxy = PyObject_GC_New(struct ic_proxy, type);
    if (!proxy)
        return NULL;
    Py_INCREF(target);
    proxy->target = target;
    proxy->rec = rec;
    proxy->last_export = NULL;
    proxy->acquired = 0;
    proxy->released = 0;
    PyObject_GC_Track((PyObject *)proxy);
    return (PyObject *)proxy;
}

int ic_proxy_traverse(PyObject *self, visitproc visit, void *arg)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    Py_VISIT(proxy->target);
    Py_VISIT(proxy->last_export);
    Py_VISIT(Py_TYPE(self)); /* heap types are referenced by their instances */
    return 0;
}

int ic_proxy_clear(PyObject *self)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    Py_CLEAR(proxy->target);
    Py_CLEAR(proxy->last_export);
    return 0;
}

void ic_proxy_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    ic_proxy_clear(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static bool ic_is_proxy(PyObject *obj)
{
    /* Every proxy type installs ic_proxy_dealloc, which makes a cheap and exact test. */
    return obj && Py_TYPE(obj)->tp_dealloc == ic_proxy_dealloc;
}

struct ic_export_record *ic_proxy_record(PyObject *obj)
{
    return ic_is_proxy(obj) ? ((struct ic_proxy *)obj)->rec : NULL;
}

void ic_proxy_detach(PyObject *obj)
{
    if (ic_is_proxy(obj))
        ((struct ic_proxy *)obj)->rec = NULL;
}

struct ic_handle {
    void *context;
    void (*release)(void *context);
};

static void ic_handle_destroy(PyObject *capsule)
{
    struct ic_handle *handle = PyCapsule_GetPointer(capsule, "interopcheck.handle");
    if (!handle) {
        PyErr_Clear();
        return;
    }
    handle->release(handle->context);
    PyMem_Free(handle);
}

PyObject *ic_handle_new(void *context, void (*release)(void *context))
{
    struct ic_handle *handle = PyMem_Malloc(sizeof(*handle));
    PyObject *capsule = NULL;
    if (handle) {
        handle->context = context;
        handle->release = release;
        capsule = PyCapsule_New(handle, "interopcheck.handle", ic_handle_destroy);
    }
    if (!capsule) {
        PyErr_Clear();
        PyMem_Free(handle);
        release(context);
    }
    return capsule;
}
