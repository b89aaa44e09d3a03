#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_export.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_text.h"

/* Copies text into a fixed field, truncating (exception texts are longer than the record's
 * fields, and truncation is the intent). */
void ic_export_producer_raised(struct ic_export_record *rec, const struct ic_py_exc *exc)
{
    rec->producer_raised = true;
    ic_text_copy(rec->producer_exc_type, sizeof(rec->producer_exc_type), exc->type,
                 strlen(exc->type));
    ic_text_copy(rec->producer_exc_message, sizeof(rec->producer_exc_message), exc->message,
                 strlen(exc->message));
}

/* Appends text at *used, keeping buf terminated when it runs out of room. */
static void ic_export_append(char *buf, size_t size, size_t *used, const char *text)
{
    if (*used + 1 >= size)
        return;
    int n = snprintf(buf + *used, size - *used, "%s", text);
    if (n > 0)
        *used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

void ic_export_format_call(const char *name, PyObject *args, PyObject *kwargs, char *buf,
                           size_t size)
{
    char item[128];
    size_t used = 0;
    bool first = true;

    if (size == 0)
        return;
    buf[0] = '\0';
    ic_export_append(buf, size, &used, name);
    ic_export_append(buf, size, &used, "(");
    if (args && PyTuple_Check(args)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
            ic_py_repr(PyTuple_GET_ITEM(args, i), item, sizeof(item));
            ic_export_append(buf, size, &used, first ? "" : ", ");
            ic_export_append(buf, size, &used, item);
            first = false;
        }
    }
    if (kwargs && PyDict_Check(kwargs)) {
        PyObject *key, *value; /* borrowed */
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            char key_text[64];
            if (ic_py_str_copy(key, key_text, sizeof(key_text)) < 0)
                snprintf(key_text, sizeof(key_text), "?");
            ic_py_repr(value, item, sizeof(item));
            ic_export_append(buf, size, &used, first ? "" : ", ");
            ic_export_append(buf, size, &used, key_text);
            ic_export_append(buf, size, &used, "=");
            ic_export_append(buf, size, &used, item);
            first = false;
        }
    }
    ic_export_append(buf, size, &used, ")");
}

static bool ic_export_diag_holds(const struct ic_diag *diag, const struct ic_diag_entry *finding)
{
    for (int i = 0; i < diag->count; i++) {
        const struct ic_diag_entry *item = &diag->items[i];
        if (item->severity == finding->severity && item->rule == finding->rule &&
            item->side == finding->side && strcmp(item->message, finding->message) == 0)
            return true;
    }
    return false;
}

void ic_export_diag_merge(struct ic_diag *dst, const struct ic_diag *src)
{
    for (int i = 0; i < src->count; i++) {
        const struct ic_diag_entry *finding = &src->items[i];
        if (!ic_export_diag_holds(dst, finding))
            ic_diag_add_side(dst, finding->severity, finding->rule, finding->side, "%s",
                             finding->message);
    }
    /* What the source had to drop are still findings of this export. */
    dst->dropped += src->dropped;
}

bool ic_export_diag_has_error(const struct ic_diag *diag, enum ic_rule rule)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].severity == IC_SEV_ERROR && diag->items[i].rule == rule)
            return true;
    }
    return false;
}

static ic_export_observer_fn ic_export_observer;
static void *ic_export_observer_context;

void ic_export_set_observer(ic_export_observer_fn fn, void *context)
{
    ic_export_observer = fn;
    ic_export_observer_context = context;
}

void ic_export_record(struct ic_export_record *rec, const struct ic_view *view, bool have_view,
                      const struct ic_diag *diag, const char *detail)
{
    bool first = !rec->have_view && rec->detail[0] == '\0';
    if (first || (have_view && !rec->have_view)) {
        if (have_view)
            rec->view = *view;
        rec->have_view = have_view;
        snprintf(rec->detail, sizeof(rec->detail), "%s", detail ? detail : "");
    }
    ic_export_diag_merge(&rec->diag, diag);
    if (ic_export_observer)
        ic_export_observer(ic_export_observer_context, diag);
}

PyObject *ic_export_proxy_type_new(const char *name, const char *doc,
                                   const PyType_Slot *protocol_slots)
{
    PyType_Slot slots[16] = {
        {Py_tp_dealloc, (void *)ic_proxy_dealloc},
        {Py_tp_traverse, (void *)ic_proxy_traverse},
        {Py_tp_clear, (void *)ic_proxy_clear},
        {Py_tp_doc, (void *)doc},
    };
    int used = 4;
    for (const PyType_Slot *slot = protocol_slots; slot->slot != 0; slot++) {
        if (used >= (int)(sizeof(slots) / sizeof(slots[0])) - 1) {
            PyErr_SetString(PyExc_SystemError, "too many slots for a proxy type");
            return NULL;
        }
        slots[used++] = *slot;
    }
    slots[used] = (PyType_Slot){0, NULL};
    PyType_Spec spec = {
        .name = name,
        .basicsize = (int)sizeof(struct ic_proxy),
        .itemsize = 0,
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
        .slots = slots,
    };
    return PyType_FromSpec(&spec);
}

int ic_export_int64(PyObject *obj, int64_t *ret, bool *ret_exact)
{
    PyObject *index = NULL;
    int rc = IC_EINVAL;
    bool exact = PyLong_Check(obj);

    if (!exact && !PyIndex_Check(obj))
        return IC_EINVAL;
    index = PyNumber_Index(obj);
    if (!index) {
        PyErr_Clear();
        goto cleanup;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow != 0) {
        rc = IC_ERANGE;
        goto cleanup;
    }
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto cleanup;
    }
    *ret = (int64_t)value;
    if (ret_exact)
        *ret_exact = exact;
    rc = 0;

cleanup:
    Py_XDECREF(index);
    return rc;
}

bool ic_export_int_tuple(PyObject *obj, const char *key, enum ic_rule rule, int64_t *values,
                         int *ret_count, struct ic_diag *diag)
{
    char text[64];

    if (!PyTuple_Check(obj)) {
        ic_diag_error(diag, rule, "%s is a %s: it must be a tuple of ints", key,
                      Py_TYPE(obj)->tp_name);
        return false;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(obj);
    if (count > IC_MAX_NDIM) {
        ic_diag_error(diag, rule, "%s has %zd entries: at most %d dimensions", key, count,
                      IC_MAX_NDIM);
        return false;
    }
    bool ok = true;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(obj, i); /* borrowed: the tuple is immutable */
        bool exact = true;
        int rc = PyBool_Check(item) ? IC_EINVAL : ic_export_int64(item, &values[i], &exact);
        if (rc == IC_ERANGE) {
            ic_py_repr(item, text, sizeof(text));
            ic_diag_error(diag, rule, "%s[%zd] = %s does not fit in int64", key, i, text);
            ok = false;
        } else if (rc < 0) {
            ic_diag_error(diag, rule, "%s[%zd] is a %s: it must be an int", key, i,
                          Py_TYPE(item)->tp_name);
            ok = false;
        } else if (!exact) {
            ic_diag_warn(diag, rule, "%s[%zd] is a %s, not a Python int", key, i,
                         Py_TYPE(item)->tp_name);
        }
    }
    *ret_count = (int)count;
    return ok;
}

int ic_export_uintptr(PyObject *obj, uintptr_t *ret)
{
    if (!PyLong_Check(obj))
        return IC_EINVAL;
    unsigned long long value = PyLong_AsUnsignedLongLong(obj);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        /* OverflowError for negative values and for values past 64 bits alike */
        PyErr_Clear();
        return IC_ERANGE;
    }
#if UINTPTR_MAX < ULLONG_MAX
    if (value > UINTPTR_MAX)
        return IC_ERANGE;
#endif
    *ret = (uintptr_t)value;
    return 0;
}

PyObject *ic_export_forward_call(struct ic_proxy *proxy, const char *name, PyObject *args,
                                 PyObject *kwargs)
{
    struct ic_export_record *rec = proxy->rec;
    struct ic_py_exc exc;
    if (rec) {
        rec->export_calls++;
        ic_export_format_call(name, args, kwargs, rec->request, sizeof(rec->request));
    }
    PyObject *method = PyObject_GetAttrString(proxy->target, name);
    PyObject *result = method ? PyObject_Call(method, args, kwargs) : NULL;
    Py_XDECREF(method);
    if (!result && rec && ic_py_peek(&exc))
        ic_export_producer_raised(rec, &exc);
    return result;
}

PyObject *ic_export_read_attribute(PyObject *target, const char *attr, struct ic_export_record *rec,
                                   bool propagate,
                                   void (*check)(PyObject *value, PyObject *target,
                                                 struct ic_export_record *rec))
{
    struct ic_py_exc exc;
    if (rec) {
        rec->export_calls++;
        snprintf(rec->request, sizeof(rec->request), "%s", attr);
    }
    PyObject *value = PyObject_GetAttrString(target, attr);
    if (!value) {
        bool raised = propagate ? ic_py_peek(&exc) : ic_py_fetch(&exc);
        if (rec && raised)
            ic_export_producer_raised(rec, &exc);
        return NULL;
    }
    if (rec)
        check(value, target, rec);
    return value;
}

PyObject *ic_export_proxy_of(struct ic_proxy_kind *kind, PyObject *target,
                             struct ic_export_record *rec)
{
    if (!kind->type)
        kind->type = ic_export_proxy_type_new(kind->name, kind->doc, kind->slots);
    return kind->type ? ic_proxy_new((PyTypeObject *)kind->type, target, rec) : NULL;
}

bool ic_export_is_proxy_of(const struct ic_proxy_kind *kind, PyObject *obj)
{
    return obj && kind->type && Py_TYPE(obj) == (PyTypeObject *)kind->type;
}

PyObject *ic_export_attribute_get(PyObject *self, void *closure)
{
    const struct ic_attribute_protocol *protocol = closure;
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    return ic_export_read_attribute(proxy->target, protocol->attribute, proxy->rec, true,
                                    protocol->record);
}

bool ic_export_strides_fit(struct ic_view *view, bool given, int64_t numel, enum ic_rule rule,
                           struct ic_diag *diag)
{
    char text[96];
    if (!given && ic_view_set_c_strides(view) < 0) {
        ic_diag_error(diag, rule, "the C-contiguous strides overflow int64");
        return false;
    }
    int64_t lo, hi, nbytes;
    if (ic_view_span(view, &lo, &hi) < 0 ||
        (numel >= 0 && __builtin_mul_overflow(numel, (int64_t)view->itemsize, &nbytes))) {
        ic_view_format_strides(view, text, sizeof(text));
        ic_diag_error(diag, rule, "the bytes addressed through strides %s overflow int64", text);
        return false;
    }
    return true;
}

void ic_export_reading_init(struct ic_export_reading *reading)
{
    memset(reading, 0, sizeof(*reading));
    ic_diag_init(&reading->diag);
}

void ic_export_keep(struct ic_export_record *rec, const struct ic_export_reading *reading)
{
    ic_export_record(rec, &reading->view, reading->have_view, &reading->diag, reading->detail);
}

bool ic_export_copy_entries(void *out, const void *array, int count, size_t size, const char *what,
                            enum ic_rule rule, struct ic_diag *diag, bool *ret_unreadable)
{
    int rc = ic_guard_copy(out, (uintptr_t)array, (size_t)count * size);
    if (rc == IC_EFAULT) {
        ic_diag_error(diag, rule,
                      "%s at %p cannot be read for its %d entries: the memory is not mapped "
                      "readable",
                      what, array, count);
        *ret_unreadable = true;
    } else if (rc < 0) {
        ic_diag_warn(diag, rule, "%s at %p could not be checked: %s", what, array, ic_strerror(rc));
    }
    return rc == 0;
}
