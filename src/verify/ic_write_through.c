/*
 * The write-through check: where an import shares the producer's memory, a write through
 * either side must be what the other side reads. Sharing is proven by addresses before this
 * runs; what only writing shows is a library that shares at import and then writes to a copy
 * (copy on write), or reads from a copy or cache of its own.
 *
 * Each direction is one trial on one element: the writer reads the element, writes another
 * value there through its own indexing (the probes' write()), reads it back, and then the
 * reader reads it through its own (read()). When the reader does not see the write, the
 * shared bytes themselves say who lost it: if they hold the new value the reader reads from
 * elsewhere; if they still hold the old one the writer wrote elsewhere.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_exchange_state.h"
#include "ic_gpu.h"
#include "ic_guard.h"

enum ic_trial_verdict {
    IC_TRIAL_NOT_RUN, /* its probes do not offer what it needs */
    IC_TRIAL_HELD,    /* the reader read what the writer wrote */
    IC_TRIAL_LOST,    /* it did not: culprit and note say who lost it and how */
    IC_TRIAL_SKIPPED, /* the trial could not be made: note says why */
};

/* One direction: `writer` writes element `flat` (C order of the logical shape) of its array,
 * `reader` reads it through its own. */
struct ic_write_trial {
    struct ic_probe *writer, *reader;
    const char *writer_name, *reader_name;
    const char *writer_has, *reader_has; /* "its import", "its array" */
    PyObject *writer_array, *reader_array;
    enum ic_side writer_side, reader_side;
    int64_t flat;
    int64_t index[IC_MAX_NDIM];
    int ndim;
    char where[96];
    uintptr_t shared; /* the element's address in the shared memory */

    enum ic_trial_verdict verdict;
    enum ic_side culprit;
    char note[IC_NOTE_MAX];
};

static bool ic_view_has_elements(const struct ic_view *view)
{
    int64_t numel = 0;
    return ic_view_numel(view, &numel) == 0 && numel > 0;
}

/* The element's bytes in the shared memory, read by the tester itself (not through either
 * library). False where they cannot be read: a device without the driver, a fault. */
static bool ic_peek(const struct ic_case_state *st, uintptr_t address, unsigned char *ret)
{
    const struct ic_view *e = &st->rec.view;
    size_t n = (size_t)e->itemsize;
    char err[160];
    if (n == 0 || n > 16)
        return false;
    if (e->device_type == IC_DEVICE_CPU)
        return ic_guard_copy(ret, address, n) == 0;
    if (e->device_type == IC_DEVICE_CUDA && ic_gpu())
        return ic_cuda_copy_to_host(ic_gpu(), ret, address, n, err, sizeof(err)) == 0;
    return false;
}

static void ic_trial_skip(struct ic_write_trial *t, const char *what, struct ic_py_exc *exc)
{
    char text[IC_NOTE_MAX / 2];
    ic_py_exc_format(exc, text, sizeof(text));
    t->verdict = IC_TRIAL_SKIPPED;
    snprintf(t->note, sizeof(t->note), "%s %s at %s raised %s", t->writer_name, what, t->where,
             text);
}

/* Whether `got` equals `want` (Python equality; an exception counts as unequal). */
static bool ic_same_value(PyObject *got, PyObject *want)
{
    int equal = PyObject_RichCompareBool(got, want, Py_EQ);
    if (equal < 0)
        PyErr_Clear();
    return equal == 1;
}

/* The writer's half: writes another value than the one there, and reads it back. Returns the
 * value written (new reference), or NULL with the trial skipped. `before` and `after` are the
 * shared bytes around the write; *peeked says whether both could be read. */
static PyObject *ic_trial_write(const struct ic_case_state *st, struct ic_write_trial *t,
                                unsigned char *before, unsigned char *after, bool *peeked)
{
    struct ic_py_exc exc = {0};
    PyObject *old = NULL, *value = NULL, *seen = NULL;
    char old_text[64], seen_text[64];

    if (ic_probe_read(t->writer, t->writer_array, t->index, t->ndim, &old, &exc) < 0) {
        ic_trial_skip(t, "reading", &exc);
        goto fail;
    }
    value = ic_py_other_scalar(old);
    if (!value) {
        t->verdict = IC_TRIAL_SKIPPED;
        snprintf(t->note, sizeof(t->note), "no other value was found for %s's element",
                 t->writer_name);
        goto fail;
    }
    *peeked = ic_peek(st, t->shared, before);
    if (ic_probe_write(t->writer, t->writer_array, t->index, t->ndim, value, &exc) < 0) {
        ic_trial_skip(t, "writing", &exc);
        goto fail;
    }
    if (ic_probe_read(t->writer, t->writer_array, t->index, t->ndim, &seen, &exc) < 0) {
        ic_trial_skip(t, "reading back its write", &exc);
        goto fail;
    }
    if (!ic_same_value(seen, value)) {
        /* Not a sharing question: the library's own assignment did not hold. */
        ic_py_repr(old, old_text, sizeof(old_text));
        ic_py_repr(seen, seen_text, sizeof(seen_text));
        t->verdict = IC_TRIAL_SKIPPED;
        snprintf(t->note, sizeof(t->note),
                 "%s wrote at %s of %s (it held %s) and reads back %s, not what it wrote",
                 t->writer_name, t->where, t->writer_has, old_text, seen_text);
        goto fail;
    }
    *peeked = *peeked && ic_peek(st, t->shared, after);
    Py_DECREF(old);
    Py_DECREF(seen);
    return value;

fail:
    Py_XDECREF(old);
    Py_XDECREF(value);
    Py_XDECREF(seen);
    return NULL;
}

/* Says who lost the write, from the shared bytes before and after it. */
static void ic_trial_blame(const struct ic_case_state *st, struct ic_write_trial *t,
                           const unsigned char *before, const unsigned char *after, bool peeked,
                           const char *value_text, const char *seen_text)
{
    size_t n = (size_t)st->rec.view.itemsize;
    int used = snprintf(t->note, sizeof(t->note),
                        "%s wrote %s at %s of %s and reads it back, but %s reads %s there "
                        "through %s: ",
                        t->writer_name, value_text, t->where, t->writer_has, t->reader_name,
                        seen_text, t->reader_has);
    size_t rest = used > 0 && (size_t)used < sizeof(t->note) ? sizeof(t->note) - (size_t)used : 0;
    char *tail = t->note + (sizeof(t->note) - rest);
    t->verdict = IC_TRIAL_LOST;
    if (!peeked) {
        t->culprit = IC_SIDE_BOTH;
        snprintf(tail, rest,
                 "the shared memory could not be read on this device to say which side lost "
                 "the write");
    } else if (memcmp(before, after, n) != 0) {
        t->culprit = t->reader_side;
        snprintf(tail, rest,
                 "the shared memory at 0x%llx holds the write, so %s reads its elements from "
                 "somewhere else (a copy or a cache)",
                 (unsigned long long)t->shared, t->reader_name);
    } else {
        t->culprit = t->writer_side;
        snprintf(tail, rest,
                 "the shared memory at 0x%llx still holds the old bytes, so %s's write went "
                 "somewhere else (a copy made on write)",
                 (unsigned long long)t->shared, t->writer_name);
    }
}

static void ic_trial_run(const struct ic_case_state *st, struct ic_write_trial *t)
{
    unsigned char before[16], after[16];
    bool peeked = false;
    struct ic_py_exc exc = {0};
    PyObject *seen = NULL;
    char value_text[64], seen_text[64];

    PyObject *value = ic_trial_write(st, t, before, after, &peeked);
    if (!value)
        return;
    if (ic_probe_read(t->reader, t->reader_array, t->index, t->ndim, &seen, &exc) < 0) {
        char text[IC_NOTE_MAX / 2];
        ic_py_exc_format(&exc, text, sizeof(text));
        t->verdict = IC_TRIAL_SKIPPED;
        snprintf(t->note, sizeof(t->note), "%s reading at %s raised %s", t->reader_name, t->where,
                 text);
    } else if (ic_same_value(seen, value)) {
        t->verdict = IC_TRIAL_HELD;
        ic_py_repr(value, value_text, sizeof(value_text));
        snprintf(t->note, sizeof(t->note), "%s wrote %s at %s, %s read it", t->writer_name,
                 value_text, t->where, t->reader_name);
    } else {
        ic_py_repr(value, value_text, sizeof(value_text));
        ic_py_repr(seen, seen_text, sizeof(seen_text));
        ic_trial_blame(st, t, before, after, peeked, value_text, seen_text);
    }
    Py_DECREF(value);
    Py_XDECREF(seen);
}

/* The multi-index of the C-order element `flat` in the case's logical shape. */
static void ic_trial_place(const struct ic_case_state *st, struct ic_write_trial *t, int64_t flat)
{
    const struct ic_view *shape = &st->expected;
    int64_t rest = flat;
    t->flat = flat;
    t->ndim = shape->ndim;
    for (int i = shape->ndim - 1; i >= 0; i--) {
        t->index[i] = shape->shape[i] > 0 ? rest % shape->shape[i] : 0;
        rest = shape->shape[i] > 0 ? rest / shape->shape[i] : 0;
    }
    ic_view_format_index(shape, flat, t->where, (int)sizeof(t->where));
    t->shared = st->rec.view.data + (uintptr_t)ic_view_offset_of(&st->rec.view, flat);
}

static void ic_trial_sides(const struct ic_case_state *st, struct ic_write_trial *t,
                           bool consumer_writes)
{
    struct ic_probe *probes[2] = {st->consumer, st->producer};
    const char *names[2] = {st->consumer_name, st->c->producer};
    const char *has[2] = {"its import", "its array"};
    PyObject *arrays[2] = {st->imported, st->array};
    enum ic_side sides[2] = {IC_SIDE_CONSUMER, IC_SIDE_PRODUCER};
    int w = consumer_writes ? 0 : 1, r = 1 - w;
    t->writer = probes[w];
    t->reader = probes[r];
    t->writer_name = names[w];
    t->reader_name = names[r];
    t->writer_has = has[w];
    t->reader_has = has[r];
    t->writer_array = arrays[w];
    t->reader_array = arrays[r];
    t->writer_side = sides[w];
    t->reader_side = sides[r];
}

/* Why the check does not run on this case, or NULL when it does. */
static const char *ic_write_through_unwanted(const struct ic_case_state *st, char *why, size_t size)
{
    const struct ic_view *p = &st->produced.view, *e = &st->rec.view, *c = &st->consumed.view;

    if (!ic_view_has_elements(&st->expected))
        return "an empty array has no element to write";
    if (!st->produced.pointer_known || !st->rec.have_view || !st->consumed.pointer_known ||
        c->host_copy || p->data != e->data || e->data != c->data)
        return "the import is not known to share the producer's memory: there is nothing to "
               "write through";
    if (st->c->variant == IC_VARIANT_READONLY || (p->readonly_known && p->readonly))
        return "the producer's array is read-only";
    if (c->readonly_known && c->readonly) {
        snprintf(why, size, "%s imported it read-only", st->consumer_name);
        return why;
    }
    if (c->dtype != st->c->dtype || !ic_view_same_shape(c, &st->expected))
        return "the import holds raw elements, not the case's dtype and shape";
    return NULL;
}

/* Whether the trial's probes offer what it needs: write() and read() of the writer, read() of
 * the reader. A library whose arrays are values (JAX, TensorFlow) offers no write(), and its
 * probe no read(): what such an array shows after the memory under it changed is undefined. */
static bool ic_trial_possible(const struct ic_write_trial *t, char *why, size_t size)
{
    const char *missing = !ic_probe_has(t->writer, "write")  ? "write"
                          : !ic_probe_has(t->writer, "read") ? "read"
                                                             : NULL;
    const char *who = t->writer_name;
    if (!missing && !ic_probe_has(t->reader, "read")) {
        missing = "read";
        who = t->reader_name;
    }
    if (missing)
        snprintf(why, size, "%s to %s not checked: the %s probe offers no %s()", t->writer_name,
                 t->reader_name, who, missing);
    return missing == NULL;
}

void ic_write_through_run(struct ic_case_state *st, struct ic_result *res)
{
    char why[IC_NOTE_MAX];
    const char *unwanted = ic_write_through_unwanted(st, why, sizeof(why));
    if (unwanted) {
        ic_result_check(res, IC_CHECK_WRITE_THROUGH, IC_CHECK_SKIP, "%s", unwanted);
        return;
    }
    int64_t numel = 0;
    ic_view_numel(&st->expected, &numel);
    struct ic_write_trial trials[2];
    memset(trials, 0, sizeof(trials));
    ic_trial_sides(st, &trials[0], true);
    ic_trial_place(st, &trials[0], numel - 1);
    ic_trial_sides(st, &trials[1], false);
    ic_trial_place(st, &trials[1], numel / 2);

    int held = 0;
    for (int i = 0; i < 2; i++) {
        struct ic_write_trial *t = &trials[i];
        if (!ic_trial_possible(t, t->note, sizeof(t->note)))
            continue;
        ic_trial_run(st, t);
        if (t->verdict == IC_TRIAL_LOST) {
            ic_result_fail(res, IC_CHECK_WRITE_THROUGH, IC_RULE_EXCHANGE_WRITE_THROUGH, t->culprit,
                           "%s", t->note);
            return;
        }
        held += t->verdict == IC_TRIAL_HELD;
    }
    /* A direction that could not be made is said, never taken for one that held. */
    ic_result_check(res, IC_CHECK_WRITE_THROUGH, held ? IC_CHECK_PASS : IC_CHECK_SKIP, "%s%s%s",
                    trials[0].note, trials[0].note[0] && trials[1].note[0] ? "; " : "",
                    trials[1].note);
}
