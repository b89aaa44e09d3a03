/*
 * ic_export: what the protocol modules share when they validate an export and fill an
 * ic_export_record: recording a producer's exception, the text of a call, the merge of
 * findings, the proxy type boilerplate, and the reading of Python integers that protocols
 * put in dicts and tuples.
 *
 * Contract
 * - These helpers only write into the record or diag they are given; text fields stay
 *   NUL-terminated (truncated when too long). Nothing here allocates except the proxy type.
 * - Everything here needs the GIL. No function leaves a Python exception pending unless it
 *   says so: an exception raised while reading a producer's object (an int too large, a repr
 *   that raises) is cleared and reported through the return value.
 * - The merge rule for findings: an export can be validated many times (a consumer asks for
 *   a buffer twice, retries __dlpack__), and the record keeps each distinct finding once.
 */
#ifndef IC_EXPORT_H
#define IC_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_proxy.h" /* Python.h: only the protocol modules use this header */
#include "ic_python.h"
#include "ic_view.h"

/* Copies a producer's exception (from ic_py_peek or ic_py_fetch) into the record and sets
 * producer_raised. */
void ic_export_producer_raised(struct ic_export_record *rec, const struct ic_py_exc *exc);

/* Writes the text of a call, "name(arg, key=value)", with repr() of every argument, into
 * buf. `args` (a tuple) and `kwargs` (a dict) may be NULL. */
void ic_export_format_call(const char *name, PyObject *args, PyObject *kwargs, char *buf,
                           size_t size);

/* Appends every finding of `src` that `dst` does not already hold (same severity, rule and
 * message). */
void ic_export_diag_merge(struct ic_diag *dst, const struct ic_diag *src);

/* True when some finding of `diag` is an error citing exactly `rule`. */
bool ic_export_diag_has_error(const struct ic_diag *diag, enum ic_rule rule);

/* Who hears of each export read as ic_export_record keeps it: its diagnostics, before the
 * export goes on to the consumer that asked (the case's runner listens while a library
 * consumer is handed exports). One listener per process, as one case runs at a time; NULL:
 * none. */
typedef void (*ic_export_observer_fn)(void *context, const struct ic_diag *diag);
void ic_export_set_observer(ic_export_observer_fn fn, void *context);

/* Records one validated export: the first one that produced a view (or, while none has,
 * the first one at all) fills rec->view, have_view and detail; the findings of every export
 * are merged into rec->diag. */
void ic_export_record(struct ic_export_record *rec, const struct ic_view *view, bool have_view,
                      const struct ic_diag *diag, const char *detail);

/* One read of an export, as a protocol's check leaves it before ic_export_keep records it. */
struct ic_export_reading {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
    char detail[160];
};

/* An empty reading: no finding, no view, no detail. */
void ic_export_reading_init(struct ic_export_reading *reading);

/* ic_export_record of the reading. */
void ic_export_keep(struct ic_export_record *rec, const struct ic_export_reading *reading);

/* A protocol's proxy type: created on first use from its name, doc and protocol slots, and kept
 * as long as the interpreter lives. */
struct ic_proxy_kind {
    const char *name;
    const char *doc;
    const PyType_Slot *slots; /* the protocol's own, ending with {0, NULL} */
    PyObject *type;           /* NULL until the first proxy is made */
};

/* A proxy of `kind` around `target`, recording into `rec`; NULL with an exception set. */
PyObject *ic_export_proxy_of(struct ic_proxy_kind *kind, PyObject *target,
                             struct ic_export_record *rec);

/* True when `obj` is a proxy of `kind`. */
bool ic_export_is_proxy_of(const struct ic_proxy_kind *kind, PyObject *obj);

/* Creates a proxy type named `name`: instances are struct ic_proxy (ic_proxy_new), tracked
 * by the garbage collector, and cannot be created from Python. `protocol_slots` adds what
 * the proxy offers (methods, getset, buffer slots) and ends with {0, NULL}; at most 8. New
 * reference, or NULL with an exception set. */
PyObject *ic_export_proxy_type_new(const char *name, const char *doc,
                                   const PyType_Slot *protocol_slots);

/* A consumer's call of the producer's method `name` through `proxy`: counted and named in the
 * proxy's record (when one is attached), then forwarded to the producer's object. A producer's
 * exception is recorded and left pending for the consumer. New reference, or NULL. */
PyObject *ic_export_forward_call(struct ic_proxy *proxy, const char *name, PyObject *args,
                                 PyObject *kwargs);

/* Reads the attribute `attr` of `target` for a consumer (the attribute protocols,
 * __array_interface__ and __array_struct__): counts and names the request in `rec` (NULL once
 * a proxy is detached: then it only forwards) and hands what was read to `check`. A producer's
 * exception is recorded; with `propagate` it stays pending for the consumer, otherwise it is
 * cleared. New reference, or NULL when the producer raised. */
PyObject *ic_export_read_attribute(PyObject *target, const char *attr, struct ic_export_record *rec,
                                   bool propagate,
                                   void (*check)(PyObject *value, PyObject *target,
                                                 struct ic_export_record *rec));

/* Defines a protocol's proxy from the Python slots it offers (`slots`, ending with {0, NULL}):
 * `prefix##_proxy_kind`, `prefix##_proxy_new` (the ops' proxy_new) and `prefix##_is_proxy`. */
#define IC_PROXY_KIND(prefix, type_name, type_doc, slots_array)                                    \
    static struct ic_proxy_kind prefix##_proxy_kind = {                                            \
        .name = (type_name), .doc = (type_doc), .slots = (slots_array)};                           \
    static PyObject *prefix##_proxy_new(PyObject *target, struct ic_export_record *rec)            \
    {                                                                                              \
        return ic_export_proxy_of(&prefix##_proxy_kind, target, rec);                              \
    }                                                                                              \
    __attribute__((unused)) static bool prefix##_is_proxy(PyObject *obj)                           \
    {                                                                                              \
        return ic_export_is_proxy_of(&prefix##_proxy_kind, obj);                                   \
    }

/* A protocol that is one method of the producer's object (__array__, __arrow_c_array__): its
 * proxy offers that method alone, as `fn` (a PyCFunction taking args and kwargs), which
 * forwards through ic_export_forward_call. Defines `prefix##_proxy_new`, `prefix##_is_proxy`. */
#define IC_METHOD_PROTOCOL(prefix, method, fn, type_name)                                          \
    static PyMethodDef prefix##_proxy_methods[] = {                                                \
        {(method), (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS,                \
         "Forwards to the producer's " method " and validates what it returns."},                  \
        {NULL, NULL, 0, NULL},                                                                     \
    };                                                                                             \
    static PyType_Slot prefix##_proxy_slots[] = {                                                  \
        {Py_tp_methods, prefix##_proxy_methods},                                                   \
        {0, NULL},                                                                                 \
    };                                                                                             \
    IC_PROXY_KIND(prefix, (type_name), "Offers " method " of a producer.", prefix##_proxy_slots)

/* A protocol that is one attribute of the producer's object (__array_interface__,
 * __array_struct__, __cuda_array_interface__): its proxy offers that attribute alone, read
 * from the producer and handed to `record` on every read. Defined by IC_ATTRIBUTE_PROTOCOL. */
struct ic_attribute_protocol {
    const char *attribute;
    void (*record)(PyObject *value, PyObject *target, struct ic_export_record *rec);
    PyGetSetDef getset[2];
    PyType_Slot slots[2];
    struct ic_proxy_kind kind;
};

/* The getter of the attribute; `closure` is its struct ic_attribute_protocol. */
PyObject *ic_export_attribute_get(PyObject *self, void *closure);

/* Defines `prefix##_proxy_new` and `prefix##_reference_consume`, the ops of an attribute
 * protocol: a proxy offering `attr` (a string literal) as the Python type `type_name`, and
 * interopcheck's consumer, which reads the attribute once and keeps what it read as the
 * import's handle (the dict, or capsule, keeps what it describes alive where the protocol
 * says anything of lifetime). */
#define IC_ATTRIBUTE_PROTOCOL(prefix, attr, type_name, record_fn)                                  \
    static struct ic_attribute_protocol prefix##_attribute = {                                     \
        .attribute = (attr),                                                                       \
        .record = (record_fn),                                                                     \
        .getset = {{(attr), ic_export_attribute_get, NULL,                                         \
                    "The producer's " attr ", validated on every read.", &prefix##_attribute},     \
                   {NULL, NULL, NULL, NULL, NULL}},                                                \
        .slots = {{Py_tp_getset, prefix##_attribute.getset}, {0, NULL}},                           \
        .kind = {.name = (type_name),                                                              \
                 .doc = "Offers " attr " of a producer.",                                          \
                 .slots = prefix##_attribute.slots},                                               \
    };                                                                                             \
    static PyObject *prefix##_proxy_new(PyObject *target, struct ic_export_record *rec)            \
    {                                                                                              \
        return ic_export_proxy_of(&prefix##_attribute.kind, target, rec);                          \
    }                                                                                              \
    static int prefix##_reference_consume(PyObject *export_obj, struct ic_export_record *rec,      \
                                          PyObject **ret_handle)                                   \
    {                                                                                              \
        *ret_handle = ic_export_read_attribute(export_obj, (attr), rec, false, (record_fn));       \
        return 0;                                                                                  \
    }

/* The strides step of a validator: the view's C-contiguous strides when the export gave none
 * (`given` false), then the bytes the strides address, and with numel >= 0 the bytes of the
 * elements, checked to fit in int64. False, with an error citing `rule`, when one does not. */
bool ic_export_strides_fit(struct ic_view *view, bool given, int64_t numel, enum ic_rule rule,
                           struct ic_diag *diag);

/* Copies an exporter's array of `count` entries of `size` bytes at `array` (shape, strides,
 * suboffsets) into `out` through the guard. False with the finding, citing `rule`, when it
 * cannot: an error and *ret_unreadable for unmapped memory, a warning when the guard could
 * not check. */
bool ic_export_copy_entries(void *out, const void *array, int count, size_t size, const char *what,
                            enum ic_rule rule, struct ic_diag *diag, bool *ret_unreadable);

/* Reads a Python int (or an object with __index__) into int64. Returns 0, IC_ERANGE when it
 * does not fit, IC_EINVAL when it is no integer. *ret_exact (may be NULL) is false for
 * integer-like objects that are not Python ints (a NumPy integer in a shape tuple). */
int ic_export_int64(PyObject *obj, int64_t *ret, bool *ret_exact);

/* Reads a tuple of ints (shape, strides) into values[], at most IC_MAX_NDIM of them; each
 * finding goes to `diag`, citing `rule` and naming `key`. A bool is refused (it is an int only
 * by inheritance); an integer-like object that is not a Python int is a warning. False when
 * the tuple cannot be used. */
bool ic_export_int_tuple(PyObject *obj, const char *key, enum ic_rule rule, int64_t *values,
                         int *ret_count, struct ic_diag *diag);

/* Reads a Python int as an address in [0, UINTPTR_MAX]. IC_ERANGE when negative or too
 * large, IC_EINVAL when no int. */
int ic_export_uintptr(PyObject *obj, uintptr_t *ret);

#endif
