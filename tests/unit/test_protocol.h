/*
 * test_protocol.h: what the protocol tests (tests/unit/protocols/) do with a protocol's ops:
 * wrap a producer in the proxy with a fresh record, let the proxy go, read an attribute
 * through it or import with the reference consumer as a consumer would, and find the ops
 * registered under the protocol's id.
 */
#ifndef IC_TEST_PROTOCOL_H
#define IC_TEST_PROTOCOL_H

#include <stdbool.h>
#include <string.h>

#include "ic_protocol.h"
#include "ic_proxy.h"

/* A proxy of `ops` around `target` that records into `rec`, freshly initialised for the plain
 * case (IC_VARIANT_NONE). A new reference. */
static inline PyObject *proxy_open(const struct ic_protocol_ops *ops, PyObject *target,
                                   struct ic_export_record *rec)
{
    ic_export_record_init(rec, ops->protocol, IC_VARIANT_NONE);
    return ops->proxy_new(target, rec);
}

/* Detaches the proxy from its record, which outlives it in the test, and releases it. */
static inline void proxy_close(PyObject *proxy)
{
    ic_proxy_detach(proxy);
    Py_DECREF(proxy);
}

/* target.<attribute> read once through a fresh proxy that records into *rec, as a consumer
 * reads it: a new reference, or NULL with the consumer's exception pending. */
static inline PyObject *read_through_proxy(const struct ic_protocol_ops *ops, PyObject *target,
                                           const char *attribute, struct ic_export_record *rec)
{
    PyObject *proxy = proxy_open(ops, target, rec);
    PyObject *value = PyObject_GetAttrString(proxy, attribute);
    PyObject *type = NULL, *exc = NULL, *traceback = NULL;
    PyErr_Fetch(&type, &exc, &traceback); /* the proxy goes with no exception set */
    proxy_close(proxy);
    PyErr_Restore(type, exc, traceback);
    return value;
}

/* Whether target.<attribute>, read once through a fresh proxy into *rec (read_through_proxy),
 * reached the consumer as a value; the value is released here. */
static inline bool passes_through_proxy(const struct ic_protocol_ops *ops, PyObject *target,
                                        const char *attribute, struct ic_export_record *rec)
{
    PyObject *value = read_through_proxy(ops, target, attribute, rec);
    bool passed = value != NULL;
    Py_XDECREF(value);
    return passed;
}

/* Whether target.<attribute>, read once through a fresh proxy into *rec (read_through_proxy),
 * raised `exc_type` in the consumer instead; the exception is cleared here. */
static inline bool raises_through_proxy(const struct ic_protocol_ops *ops, PyObject *target,
                                        const char *attribute, PyObject *exc_type,
                                        struct ic_export_record *rec)
{
    PyObject *value = read_through_proxy(ops, target, attribute, rec);
    bool raised = !value && PyErr_ExceptionMatches(exc_type);
    Py_XDECREF(value);
    PyErr_Clear();
    return raised;
}

/* interopcheck's reference consumer importing `target` as `variant` asks, into a fresh *rec:
 * the consumer's status, and its handle in *ret_handle (NULL when the producer raised). */
static inline int reference_import(const struct ic_protocol_ops *ops, PyObject *target,
                                   enum ic_variant variant, struct ic_export_record *rec,
                                   PyObject **ret_handle)
{
    *ret_handle = NULL;
    ic_export_record_init(rec, ops->protocol, variant);
    return ops->reference_consume(target, rec, ret_handle);
}

/* Whether ic_protocol_ops finds `ops` for `protocol`, the protocol is found by its id, and
 * the ops name the rules the generic checks cite for it (ic_protocol_facts). */
static inline bool ops_registered(enum ic_protocol protocol, const struct ic_protocol_ops *ops)
{
    enum ic_protocol by_id;
    return ic_protocol_ops(protocol) == ops && ops->protocol == protocol &&
           ic_protocol_from_id(ic_protocol_id(protocol), &by_id) == 0 && by_id == protocol &&
           ops->facts.readonly_rule != IC_RULE_NONE && ops->facts.memory_rule != IC_RULE_NONE;
}

#endif
