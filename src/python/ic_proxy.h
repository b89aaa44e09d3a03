/*
 * ic_proxy: the common base of the protocol proxies, and import handles.
 *
 * Contract
 * - A proxy is a Python object that stands between a producer's export object (`target`)
 *   and a consumer: it offers exactly one protocol, forwards every request to the target,
 *   and records what crossed in an ic_export_record. Each protocol module defines its own
 *   proxy type whose instances start with `struct ic_proxy`.
 * - The record belongs to the case (ic_exchange) and lives only while the case runs. A
 *   consumer may keep a proxy longer (a leak, or a deliberate reference), so proxies write to
 *   the record only while attached; ic_proxy_detach cuts the link at the end of the case.
 *   Counters that must survive the case (buffer gets and releases) live in the proxy itself.
 * - A handle is what interopcheck's own consumer holds for an import: a capsule whose
 *   destructor runs a release function once. Releasing the handle is the consumer letting go.
 * - Everything here needs the GIL. This header includes Python.h: only the protocol modules
 *   and tests include it.
 */
#ifndef IC_PROXY_H
#define IC_PROXY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_protocol.h"

struct ic_proxy {
    PyObject_HEAD
    PyObject *target;             /* strong reference to the producer's export object */
    struct ic_export_record *rec; /* NULL once detached */
    PyObject *last_export;        /* the last object handed out (a DLPack capsule), or NULL */
    int acquired;                 /* buffer protocol: successful gets */
    int released;                 /* buffer protocol: releases */
};

/* Creates a proxy of `type` (a type whose instances start with struct ic_proxy and whose
 * tp_dealloc is ic_proxy_dealloc or calls it). New reference, NULL with an exception set. */
PyObject *ic_proxy_new(PyTypeObject *type, PyObject *target, struct ic_export_record *rec);

/* tp_dealloc for proxy types: drops target and last_export. */
void ic_proxy_dealloc(PyObject *self);

/* tp_traverse / tp_clear for proxy types (proxies can sit in reference cycles). */
int ic_proxy_traverse(PyObject *self, visitproc visit, void *arg);
int ic_proxy_clear(PyObject *self);

/* The record of an attached proxy, NULL when detached or when `obj` is no proxy. */
struct ic_export_record *ic_proxy_record(PyObject *obj);

/* Stops the proxy from writing to its record. Safe on NULL. */
void ic_proxy_detach(PyObject *obj);

/* A handle that calls release(context) exactly once when its last reference goes. New
 * reference, or NULL when memory ran out: release(context) has then been called already and
 * no exception is left set, so `context` is gone either way. */
PyObject *ic_handle_new(void *context, void (*release)(void *context));

#endif
