#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_arrow_stream.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_export.h"
#include "ic_guard.h"
#include "ic_proxy.h"
#include "ic_python.h"

/* Everything one stream left with us (ic_arrow_stream.h, "Ownership"). */
struct ic_arrow_stream {
    atomic_int owners;                /* the proxy or handle, and the replay until released */
    struct ArrowArrayStream producer; /* moved out of the producer's capsule */
    bool producer_taken;              /* producer holds a stream that is ours to release */
    struct ArrowSchema schema;        /* get_schema's answer, ours to release */
    struct ArrowArray *chunks;        /* release NULL once handed out */
    int chunk_count, chunk_capacity;
    int next;                     /* the replay's next chunk */
    atomic_int replay_releases;   /* calls of the replay's release */
    bool producer_left_set;       /* the producer's stream release returned with release set */
    PyObject *joined;             /* several arrays' elements, joined; or NULL */
};

static void ic_stream_release_contents(struct ic_arrow_stream *s)
{
    for (int i = 0; i < s->chunk_count; i++) {
        if (s->chunks[i].release)
            s->chunks[i].release(&s->chunks[i]);
    }
    if (s->schema.release)
        s->schema.release(&s->schema);
    if (s->producer_taken && s->producer.release) {
        s->producer.release(&s->producer);
        s->producer_left_set = s->producer.release != NULL;
    }
    s->producer_taken = false;
}

/* One owner lets go; the last one frees. Python's objects are only touched with the GIL held:
 * the last owner is the proxy or handle (under the GIL) unless the consumer released the
 * replay after the case, from wherever it runs; the joined copy is then left to the process. */
static void ic_stream_unref(struct ic_arrow_stream *s, bool holds_gil)
{
    if (atomic_fetch_sub(&s->owners, 1) != 1)
        return;
    ic_stream_release_contents(s);
    if (holds_gil)
        Py_XDECREF(s->joined);
    free(s->chunks);
    free(s);
}

/* ---------------------------------------------------------------------------------------
 * Reading the producer's stream
 */

/* The producer's text for a failed call, when it gives one. */
static void ic_stream_last_error(struct ic_arrow_stream *s, char *text, size_t size)
{
    const char *message =
        s->producer.get_last_error ? s->producer.get_last_error(&s->producer) : NULL;
    char copy[200] = "";
    for (size_t i = 0; message && i + 1 < sizeof(copy); i++) {
        if (ic_guard_copy(&copy[i], (uintptr_t)message + i, 1) < 0 || !copy[i])
            break;
    }
    snprintf(text, size, "%s", copy[0] ? copy : "no text from get_last_error");
}

/* The (schema, array) pair to validate for one array of the stream: the array itself, or the
 * one field of a struct type. False with a finding when a struct is not of that form. */
static bool ic_stream_column(const struct ArrowSchema *schema, const struct ArrowArray *array,
                             const void **ret_schema, const void **ret_array, struct ic_diag *diag)
{
    char format[3] = "";
    *ret_schema = schema;
    *ret_array = array;
    if (!schema->format || ic_guard_copy(format, (uintptr_t)schema->format, 2) < 0 ||
        strcmp(format, "+s") != 0)
        return true;
    void *child_schema = NULL, *child_array = NULL;
    if (schema->n_children != 1 || array->n_children != 1 || !schema->children ||
        !array->children ||
        ic_guard_copy(&child_schema, (uintptr_t)schema->children, sizeof(void *)) < 0 ||
        ic_guard_copy(&child_array, (uintptr_t)array->children, sizeof(void *)) < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_STREAM,
                      "the stream's type is a struct of %lld fields (the array has %lld "
                      "children): one field, readable, was expected",
                      (long long)schema->n_children, (long long)array->n_children);
        return false;
    }
    if (array->offset != 0 || array->null_count > 0) {
        ic_diag_warn(diag, IC_RULE_ARROW_STREAM,
                     "a struct array with offset %lld and %lld nulls: its field is not compared",
                     (long long)array->offset, (long long)array->null_count);
        return false;
    }
    *ret_schema = child_schema;
    *ret_array = child_array;
    return true;
}

/* Validates every array read, and makes the export's one view of them (`views` and `exs`:
 * room for one per array, at least one). */
static void ic_stream_view_of(struct ic_arrow_stream *s, struct ic_view *views,
                              struct ic_arrow_export *exs, struct ic_export_reading *r)
{
    int64_t total = 0;
    bool bools = false;
    for (int i = 0; i < s->chunk_count; i++) {
        const void *schema = NULL, *array = NULL;
        bool have = false;
        if (!ic_stream_column(&s->schema, &s->chunks[i], &schema, &array, &r->diag))
            return;
        ic_arrow_check_structs(schema, array, false, &r->diag, &exs[i], &views[i], &have, r->detail,
                               sizeof(r->detail));
        if (exs[i].bools) /* bit-packed: unpacked into the joined copy below */
            ic_arrow_bool_view(NULL, exs[i].array.length, &views[i]);
        else if (!have)
            return;
        bools = bools || exs[i].bools;
        total += views[i].shape[0];
    }
    if (s->chunk_count == 1 && !bools) {
        r->view = views[0];
        r->have_view = true;
        return;
    }
    char format[32] = "";
    const void *field = NULL, *unused = NULL;
    struct ArrowArray none = {0};
    struct ArrowSchema field_schema;
    if (s->chunk_count == 0) {
        /* No array: an empty export of the schema's (or its one field's) type. */
        none.n_children = s->schema.n_children;
        none.children = (struct ArrowArray **)s->schema.children; /* only read as pointers */
        if (!ic_stream_column(&s->schema, &none, &field, &unused, &r->diag) ||
            ic_guard_copy(&field_schema, (uintptr_t)field, sizeof(field_schema)) < 0 ||
            !field_schema.format ||
            ic_guard_copy(format, (uintptr_t)field_schema.format, sizeof(format) - 1) < 0)
            return;
        enum ic_dtype dtype = ic_arrow_format_dtype(format);
        snprintf(r->detail, sizeof(r->detail), "arrow stream of no array, format \"%s\"", format);
        if (dtype == IC_DTYPE_INVALID)
            return;
        memset(&views[0], 0, sizeof(views[0]));
        views[0].dtype = dtype;
        views[0].itemsize = ic_dtype_info(dtype)->itemsize;
        views[0].device_type = IC_DEVICE_CPU;
        views[0].readonly = true;
    } else {
        /* Several arrays, or bit-packed booleans: their elements joined, in order, into one
         * copy, a byte per boolean. */
        int itemsize = views[0].itemsize;
        s->joined = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * itemsize));
        if (!s->joined) {
            PyErr_Clear();
            return;
        }
        char *to = PyBytes_AS_STRING(s->joined);
        for (int i = 0; i < s->chunk_count; i++) {
            size_t bytes = (size_t)(views[i].shape[0] * itemsize);
            if (views[i].dtype != views[0].dtype)
                return;
            if (exs[i].bools ? ic_arrow_unpack_bools(&exs[i], (unsigned char *)to) < 0
                             : bytes && ic_guard_copy(to, views[i].data, bytes) < 0)
                return;
            to += bytes;
        }
        views[0].data = (uintptr_t)PyBytes_AS_STRING(s->joined);
        views[0].host_copy = true; /* our copy: its address says nothing of sharing */
        snprintf(r->detail, sizeof(r->detail), "arrow stream of %d arrays, %lld elements",
                 s->chunk_count, (long long)total);
    }
    views[0].ndim = 1;
    views[0].shape[0] = total;
    views[0].strides[0] = views[0].itemsize;
    r->view = views[0];
    r->have_view = true;
}

static void ic_stream_view(struct ic_arrow_stream *s, struct ic_export_reading *r)
{
    struct ic_view views_on_stack[8];
    struct ic_arrow_export exs_on_stack[8];
    struct ic_view *views = views_on_stack;
    struct ic_arrow_export *exs = exs_on_stack;
    if (s->chunk_count > 8) {
        views = calloc((size_t)s->chunk_count, sizeof(*views));
        exs = calloc((size_t)s->chunk_count, sizeof(*exs));
    }
    if (views && exs)
        ic_stream_view_of(s, views, exs, r);
    if (views != views_on_stack)
        free(views);
    if (exs != exs_on_stack)
        free(exs);
}

/* Calls get_schema, then get_next until the stream ends; findings go into r->diag. */
static void ic_stream_read(struct ic_arrow_stream *s, struct ic_export_reading *r)
{
    char why[240];
    struct ArrowArrayStream *p = &s->producer;
    if (!p->get_schema || !p->get_next || !p->get_last_error) {
        ic_diag_error(&r->diag, IC_RULE_ARROW_STREAM,
                      "the ArrowArrayStream leaves a callback NULL (get_schema %s, get_next %s, "
                      "get_last_error %s)",
                      p->get_schema ? "set" : "NULL", p->get_next ? "set" : "NULL",
                      p->get_last_error ? "set" : "NULL");
        return;
    }
    int rc = p->get_schema(p, &s->schema);
    if (rc != 0 || !s->schema.release) {
        if (rc != 0)
            ic_stream_last_error(s, why, sizeof(why));
        ic_diag_error(&r->diag, IC_RULE_ARROW_STREAM, "get_schema returned %d%s%s", rc,
                      rc ? ": " : " and a released schema", rc ? why : "");
        return;
    }
    for (;;) {
        struct ArrowArray array = {0};
        rc = p->get_next(p, &array);
        if (rc != 0) {
            ic_stream_last_error(s, why, sizeof(why));
            ic_diag_error(&r->diag, IC_RULE_ARROW_STREAM,
                          "get_next returned %d after %d arrays: %s", rc, s->chunk_count, why);
            return;
        }
        if (!array.release)
            break;
        if (s->chunk_count == s->chunk_capacity) {
            int capacity = s->chunk_capacity ? 2 * s->chunk_capacity : 4;
            struct ArrowArray *more = capacity <= IC_ARROW_STREAM_MAX_CHUNKS
                                          ? realloc(s->chunks, (size_t)capacity * sizeof(*more))
                                          : NULL;
            if (!more) {
                array.release(&array);
                ic_diag_warn(&r->diag, IC_RULE_ARROW_STREAM,
                             "the stream goes on past %d arrays: interopcheck does not compare "
                             "it",
                             s->chunk_count);
                return;
            }
            s->chunks = more;
            s->chunk_capacity = capacity;
        }
        s->chunks[s->chunk_count++] = array;
    }
    ic_stream_view(s, r);
}

/* The stream in `capsule`, moved out into a new struct ic_arrow_stream (one owner), read and
 * validated into `rec`. NULL when nothing could be taken (a finding says why). */
static struct ic_arrow_stream *ic_stream_take(PyObject *capsule, struct ic_export_record *rec)
{
    struct ic_export_reading r;
    struct ic_arrow_stream *s = NULL;
    void *addr = NULL, *none = NULL;

    ic_export_reading_init(&r);
    snprintf(r.detail, sizeof(r.detail), "__arrow_c_stream__ -> %s", Py_TYPE(capsule)->tp_name);
    const char *name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    if (!name || strcmp(name, IC_ARROW_STREAM_CAPSULE) != 0) {
        PyErr_Clear();
        ic_diag_error(&r.diag, IC_RULE_ARROW_CAPSULES,
                      "__arrow_c_stream__ returned a %s%s%s%s, not a PyCapsule named "
                      "\"" IC_ARROW_STREAM_CAPSULE "\"",
                      Py_TYPE(capsule)->tp_name, name ? " named \"" : "", name ? name : "",
                      name ? "\"" : "");
    } else if (!(addr = PyCapsule_GetPointer(capsule, name)) || !(s = calloc(1, sizeof(*s)))) {
        PyErr_Clear();
    } else if (ic_guard_copy(&s->producer, (uintptr_t)addr, sizeof(s->producer)) < 0 ||
               !s->producer.release) {
        ic_diag_error(&r.diag, IC_RULE_ARROW_STRUCTS,
                      "the capsule's ArrowArrayStream at %p cannot be read or is released", addr);
    } else if (ic_guard_store((uintptr_t)addr + offsetof(struct ArrowArrayStream, release), &none,
                              sizeof(none)) == 0) {
        /* Moved: the capsule's destructor leaves the stream to us. */
        s->producer_taken = true;
        atomic_init(&s->owners, 1);
        ic_stream_read(s, &r);
    }
    ic_export_keep(rec, &r);
    rec->zero_copy_known = false; /* a copy is the producer's choice, as for arrow */
    if (s && !s->producer_taken) {
        free(s);
        s = NULL;
    }
    return s;
}

/* ---------------------------------------------------------------------------------------
 * The replay a library consumer gets
 */

static int ic_replay_get_schema(struct ArrowArrayStream *self, struct ArrowSchema *out)
{
    struct ic_arrow_stream *s = self->private_data;
    if (!s->producer_taken)
        return EINVAL;
    return s->producer.get_schema(&s->producer, out);
}

static int ic_replay_get_next(struct ArrowArrayStream *self, struct ArrowArray *out)
{
    struct ic_arrow_stream *s = self->private_data;
    memset(out, 0, sizeof(*out));
    if (s->next < s->chunk_count) {
        *out = s->chunks[s->next];
        s->chunks[s->next].release = NULL; /* moved to the consumer */
        s->next++;
    }
    return 0;
}

static const char *ic_replay_get_last_error(struct ArrowArrayStream *self)
{
    (void)self;
    return "interopcheck's replay of the producer's stream failed";
}

static void ic_replay_release(struct ArrowArrayStream *self)
{
    struct ic_arrow_stream *s = self->private_data;
    if (atomic_fetch_add(&s->replay_releases, 1) == 0) {
        self->release = NULL;
        /* The GIL may not be held here: the joined copy waits for the last owner. */
        ic_stream_unref(s, PyGILState_Check() == 1);
    }
}

static void ic_replay_capsule_destructor(PyObject *capsule)
{
    struct ArrowArrayStream *out = PyCapsule_GetPointer(capsule, IC_ARROW_STREAM_CAPSULE);
    if (!out) {
        PyErr_Clear();
        return;
    }
    if (out->release) /* not moved: the capsule releases it, as the spec has it */
        out->release(out);
    free(out);
}

/* A capsule holding the replay of `s`, which takes a second owner. NULL with an exception. */
static PyObject *ic_replay_capsule(struct ic_arrow_stream *s, struct ic_export_record *rec)
{
    struct ArrowArrayStream *out = calloc(1, sizeof(*out));
    if (!out)
        return PyErr_NoMemory();
    /* Each array goes out with a counting release callback (ic_arrow_watch). */
    for (int i = 0; i < s->chunk_count && rec; i++) {
        int id = -1;
        int capacity = (int)(sizeof(rec->watch) / sizeof(rec->watch[0]));
        if (rec->watch_count < capacity && ic_arrow_watch(&s->chunks[i], false, &id) == 0)
            rec->watch[rec->watch_count++] = id;
    }
    out->get_schema = ic_replay_get_schema;
    out->get_next = ic_replay_get_next;
    out->get_last_error = ic_replay_get_last_error;
    out->release = ic_replay_release;
    out->private_data = s;
    atomic_fetch_add(&s->owners, 1);
    PyObject *capsule = PyCapsule_New(out, IC_ARROW_STREAM_CAPSULE, ic_replay_capsule_destructor);
    if (!capsule) {
        ic_replay_release(out);
        free(out);
    }
    return capsule;
}

/* The proxy's owner references: capsules of our own, one per stream handed out, in a list in
 * proxy->last_export until finish() (a consumer may ask again, as DuckDB does for each scan,
 * while the record's view still points into the first stream's arrays). */
static void ic_stream_owner_destructor(PyObject *owner)
{
    struct ic_arrow_stream *s = PyCapsule_GetPointer(owner, "interopcheck.arrow_stream");
    if (!s) {
        PyErr_Clear();
        return;
    }
    ic_stream_unref(s, true);
}

static PyObject *ic_stream_proxy_stream(PyObject *self, PyObject *args, PyObject *kwargs)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    PyObject *capsule = ic_export_forward_call(proxy, "__arrow_c_stream__", args, kwargs);
    if (!capsule || !rec)
        return capsule; /* the producer's exception goes on to the consumer unchanged */
    struct ic_arrow_stream *s = ic_stream_take(capsule, rec);
    if (!s)
        return capsule; /* not a stream we could take: the consumer gets what it was */
    Py_DECREF(capsule); /* its stream moved to us: the capsule holds nothing now */
    PyObject *owner = PyCapsule_New(s, "interopcheck.arrow_stream", ic_stream_owner_destructor);
    if (!owner) {
        ic_stream_unref(s, true);
        return NULL;
    }
    if (!proxy->last_export && !(proxy->last_export = PyList_New(0))) {
        Py_DECREF(owner);
        return NULL;
    }
    int appended = PyList_Append(proxy->last_export, owner);
    Py_DECREF(owner);
    return appended < 0 ? NULL : ic_replay_capsule(s, rec);
}

IC_METHOD_PROTOCOL(ic_stream, "__arrow_c_stream__", ic_stream_proxy_stream,
                   "interopcheck.ArrowStreamProxy")

/* ---------------------------------------------------------------------------------------
 * observe / finish
 */

static struct ic_arrow_stream *ic_stream_of(PyObject *owner)
{
    if (!owner || !PyCapsule_IsValid(owner, "interopcheck.arrow_stream"))
        return NULL;
    return PyCapsule_GetPointer(owner, "interopcheck.arrow_stream");
}

/* The streams a proxy handed out: its list of owners (NULL: none, or no proxy). */
static PyObject *ic_stream_owners(PyObject *obj)
{
    PyObject *owners = ic_stream_is_proxy(obj) ? ((struct ic_proxy *)obj)->last_export : NULL;
    return owners && PyList_Check(owners) ? owners : NULL;
}

static void ic_stream_observe(PyObject *obj, struct ic_export_record *rec)
{
    PyObject *owners = ic_stream_owners(obj);
    for (Py_ssize_t i = 0; rec && owners && i < PyList_GET_SIZE(owners); i++) {
        struct ic_arrow_stream *s = ic_stream_of(PyList_GET_ITEM(owners, i));
        if (s && (s->next > 0 || atomic_load(&s->replay_releases) > 0))
            rec->consumed = true;
    }
}

/* The verdict on one replay's release and the producer's, once the case is over. */
static void ic_stream_judge_release(const struct ic_arrow_stream *s, Py_ssize_t index,
                                    struct ic_export_record *rec)
{
    int calls = atomic_load(&s->replay_releases);
    if (calls != 1) {
        ic_diag_add_side(&rec->lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_CONSUMER,
                         "stream %zd: the ArrowArrayStream's release was called %d times: the "
                         "consumer that moved it out must call it exactly once%s",
                         index + 1, calls, calls ? "" : " (it leaks the producer's stream)");
        if (calls == 0)
            rec->lifetime.items[rec->lifetime.count - 1].provisional = true;
    }
    if (calls >= 1 && s->producer_left_set)
        ic_diag_add_side(&rec->lifetime, IC_SEV_ERROR, IC_RULE_ARROW_STREAM, IC_SIDE_PRODUCER,
                         "stream %zd: the producer's release of the ArrowArrayStream returned "
                         "without setting release to NULL",
                         index + 1);
}

static void ic_stream_finish(PyObject *obj, struct ic_export_record *rec)
{
    if (!rec)
        return;
    PyObject *owners = ic_stream_owners(obj);
    for (Py_ssize_t i = 0; owners && i < PyList_GET_SIZE(owners); i++) {
        const struct ic_arrow_stream *s = ic_stream_of(PyList_GET_ITEM(owners, i));
        if (s)
            ic_stream_judge_release(s, i, rec);
    }
    if (ic_stream_is_proxy(obj))
        Py_CLEAR(((struct ic_proxy *)obj)->last_export);
    for (int i = 0; i < rec->watch_count; i++) {
        struct ic_arrow_watch_state state;
        if (ic_arrow_watch_state(rec->watch[i], &state) < 0)
            continue;
        if (state.calls != 1) {
            ic_diag_add_side(&rec->lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_CONSUMER,
                             "array %d of the stream: its release callback was called %d times; "
                             "the consumer that took it must call it exactly once",
                             i, state.calls);
            if (state.calls == 0)
                rec->lifetime.items[rec->lifetime.count - 1].provisional = true;
        } else if (state.forwarded && state.left_set) {
            ic_diag_add_side(&rec->lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_PRODUCER,
                             "the producer's release callback of array %d returned without "
                             "setting release to NULL",
                             i);
        }
        ic_arrow_watch_release(rec->watch[i]);
    }
    rec->lifetime_checked = true;
}

/* ---------------------------------------------------------------------------------------
 * interopcheck's own consumer: reads the stream, keeps it until the case is over
 */

static void ic_stream_handle_release(void *context)
{
    ic_stream_unref(context, true);
}

/* The schema capsule of the stream's own type, for the requested_schema variant: read from a
 * stream made without it (get_schema called on the capsule's struct, then everything
 * released), or NULL when there is none to read (the plain request then judges the export). */
static PyObject *ic_stream_own_schema(PyObject *export_obj, char *format, size_t size)
{
    PyObject *first = PyObject_CallMethod(export_obj, "__arrow_c_stream__", NULL);
    PyObject *requested = NULL;
    struct ArrowArrayStream stream;
    struct ArrowSchema schema = {0};
    void *addr = first && PyCapsule_IsValid(first, IC_ARROW_STREAM_CAPSULE)
                     ? PyCapsule_GetPointer(first, IC_ARROW_STREAM_CAPSULE)
                     : NULL;
    if (addr && ic_guard_copy(&stream, (uintptr_t)addr, sizeof(stream)) == 0 &&
        stream.release && stream.get_schema && stream.get_schema(addr, &schema) == 0 &&
        schema.release) {
        if (ic_arrow_schema_format(&schema, format, size) == 0)
            requested = ic_arrow_schema_capsule_new(format);
        schema.release(&schema);
    }
    PyErr_Clear();
    Py_XDECREF(first); /* its destructor releases the stream */
    return requested;
}

static int ic_stream_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                       PyObject **ret_handle)
{
    struct ic_py_exc exc;
    char format[32] = "";
    *ret_handle = NULL;
    PyObject *requested = rec->variant == IC_VARIANT_ARROW_STREAM_REQUESTED_SCHEMA
                              ? ic_stream_own_schema(export_obj, format, sizeof(format))
                              : NULL;
    rec->export_calls++;
    if (requested)
        snprintf(rec->request, sizeof(rec->request),
                 "__arrow_c_stream__(requested_schema=its own schema, format \"%s\")", format);
    else
        snprintf(rec->request, sizeof(rec->request), "__arrow_c_stream__()");
    PyObject *capsule =
        requested ? PyObject_CallMethod(export_obj, "__arrow_c_stream__", "O", requested)
                  : PyObject_CallMethod(export_obj, "__arrow_c_stream__", NULL);
    bool asked_own_schema = requested != NULL;
    Py_XDECREF(requested);
    if (!capsule) {
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        if (asked_own_schema)
            ic_arrow_requested_refused(rec, format, &exc);
        return 0; /* a refusal; whether one was allowed is the driver's call */
    }
    struct ic_arrow_stream *s = ic_stream_take(capsule, rec);
    Py_DECREF(capsule);
    if (!s)
        return 0;
    rec->consumed = true;
    *ret_handle = ic_handle_new(s, ic_stream_handle_release);
    return *ret_handle ? 0 : IC_ENOMEM;
}

const struct ic_protocol_ops ic_arrow_stream_ops = {
    .protocol = IC_PROTOCOL_ARROW_STREAM,
    .facts = {.readonly_rule = IC_RULE_EXCHANGE_READONLY, .memory_rule = IC_RULE_ARROW_BUFFERS},
    .proxy_new = ic_stream_proxy_new,
    .reference_consume = ic_stream_reference_consume,
    .observe = ic_stream_observe,
    .finish = ic_stream_finish,
};
