/* Unit tests of ic_arrow: the validator on ArrowSchema / ArrowArray pairs built here, one broken
 * rule at a time; memory that is not there; the release watch; then pyarrow's own exports (a
 * real producer, imported by the test only) through the proxy and the reference consumer, and
 * a consumer that moves a struct and never releases it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#include <sys/mman.h>

#include "ic_arrow.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

/* --- Structs built here -------------------------------------------------------------------- */

static int64_t values[16];
static unsigned char all_valid[2] = {0xff, 0xff};
static int schema_releases, array_releases;

static void count_schema_release(struct ArrowSchema *schema)
{
    schema_releases++;
    schema->release = NULL;
}

static void count_array_release(struct ArrowArray *array)
{
    array_releases++;
    array->release = NULL;
}

/* A release that forgets to mark the struct released. */
static void sloppy_array_release(struct ArrowArray *array)
{
    (void)array;
    array_releases++;
}

struct pair {
    struct ArrowSchema schema;
    struct ArrowArray array;
    const void *buffers[2];
};

/* An int64 array of 8 elements at offset 2 of `values`, no validity bitmap. */
static void good_pair(struct pair *p)
{
    memset(p, 0, sizeof(*p));
    p->schema.format = "l";
    p->schema.flags = ARROW_FLAG_NULLABLE;
    p->schema.release = count_schema_release;
    p->buffers[0] = NULL;
    p->buffers[1] = values;
    p->array.length = 8;
    p->array.offset = 2;
    p->array.n_buffers = 2;
    p->array.buffers = p->buffers;
    p->array.release = count_array_release;
}

struct checked {
    struct ic_diag diag;
    struct ic_arrow_export ex;
    struct ic_view view;
    bool have_view;
    char detail[160];
};

static struct checked check_pair(const struct pair *p)
{
    struct checked c;
    ic_diag_init(&c.diag);
    ic_arrow_check_structs(&p->schema, &p->array, false, &c.diag, &c.ex, &c.view, &c.have_view,
                           c.detail, sizeof(c.detail));
    return c;
}

/* One field of the good pair broken at a time: X(the change, the rule of its error, what the
 * test says). Each must give that error, and no view. */
#define BROKEN_FIELDS(X)                                                                           \
    X(p.schema.release = NULL, IC_RULE_ARROW_STRUCTS,                                              \
      "a schema released already is arrow.structs")                                                \
    X(p.schema.format = NULL, IC_RULE_ARROW_SCHEMA, "a NULL format is arrow.schema")               \
    X(p.schema.format = "", IC_RULE_ARROW_SCHEMA, "an empty format is arrow.schema")               \
    X(p.schema.format = "u", IC_RULE_EXCHANGE_DTYPE,                                               \
      "a string array for an int64 array is exchange.dtype")                                       \
    X(p.schema.n_children = 1, IC_RULE_ARROW_SCHEMA,                                               \
      "n_children 1 with no children array is arrow.schema")                                       \
    X(p.array.length = -1, IC_RULE_ARROW_ARRAY, "a negative length is arrow.array")                \
    X(p.array.offset = INT64_MAX, IC_RULE_ARROW_ARRAY,                                             \
      "offset + length past INT64_MAX is arrow.array")                                             \
    X(p.array.null_count = 9, IC_RULE_ARROW_ARRAY, "null_count above length is arrow.array")       \
    X(p.array.n_buffers = 3, IC_RULE_ARROW_ARRAY,                                                  \
      "three buffers for a primitive format is arrow.array")                                       \
    X(p.array.null_count = 2, IC_RULE_ARROW_BUFFERS,                                               \
      "null_count 2 without a validity bitmap is arrow.buffers")                                   \
    X(p.buffers[1] = NULL, IC_RULE_ARROW_BUFFERS, "no values buffer is arrow.buffers")

static void test_rules(void)
{
    struct pair p;
    good_pair(&p);
    struct checked c = check_pair(&p);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.dtype == IC_DTYPE_INT64 &&
               c.view.shape[0] == 8 && c.view.strides[0] == 8 &&
               c.view.data == (uintptr_t)(values + 2) && strcmp(c.ex.format, "l") == 0,
           "a correct int64 export at offset 2: no findings, the view of its 8 elements");
    show_diag("good", &c.diag);

    ic_diag_init(&c.diag);
    ic_arrow_check_structs(NULL, &p.array, false, &c.diag, &c.ex, &c.view, &c.have_view, c.detail,
                           sizeof(c.detail));
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_STRUCTS) && !c.have_view,
           "a NULL schema pointer is arrow.structs");
#define CHECK_BROKEN(change, rule, what)                                                           \
    good_pair(&p);                                                                                 \
    change;                                                                                        \
    c = check_pair(&p);                                                                            \
    TAP_OK(has_error(&c.diag, rule) && !c.have_view, "%s", what);                                  \
    show_diag(what, &c.diag);
    BROKEN_FIELDS(CHECK_BROKEN)
#undef CHECK_BROKEN

    good_pair(&p);
    p.schema.flags = 0x80;
    c = check_pair(&p);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARROW_SCHEMA) && c.diag.errors == 0 && c.have_view,
           "an undefined flag bit is an arrow.schema warning, and the view stands");

    good_pair(&p);
    p.buffers[0] = all_valid;
    c = check_pair(&p);
    TAP_OK(c.diag.count == 0 && c.have_view, "a validity bitmap with every element valid passes");
    unsigned char one_null[2] = {0xff, 0xff & ~(1u << 4)}; /* element 12 - 2 = 10: outside */
    p.buffers[0] = one_null;
    c = check_pair(&p);
    TAP_OK(c.diag.count == 0, "a null bit outside [offset, offset + length) is not counted");
    one_null[0] = (unsigned char)~(1u << 3); /* element 3 - 2 = 1 */
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.have_view,
           "null_count 0 with a null in the bitmap is arrow.buffers");
    p.array.null_count = 1;
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.have_view,
           "an element exported as null, though the array has none, is arrow.buffers");
    show_diag("one null", &c.diag);
    ic_diag_init(&c.diag);
    ic_arrow_check_structs(&p.schema, &p.array, true, &c.diag, &c.ex, &c.view, &c.have_view,
                           c.detail, sizeof(c.detail));
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.validity_kind == IC_VALIDITY_BITMAP &&
               c.view.validity == (uintptr_t)one_null && c.view.validity_bit == 2,
           "where the case built nulls the same export passes, and its view carries the bitmap "
           "at the array's offset (which elements are null is the judge's to check)");
    good_pair(&p);
    c = check_pair(&p);
    TAP_OK(c.view.validity_kind == IC_VALIDITY_NONE,
           "an export without a validity bitmap says no element is null");

    good_pair(&p);
    p.schema.format = "b";
    unsigned char bits[2] = {0xb4, 0x03}; /* bits 2..9, LSB first: 1 0 1 1 0 1 1 1 */
    p.buffers[1] = bits;
    c = check_pair(&p);
    unsigned char unpacked[8] = {0};
    const unsigned char want[8] = {1, 0, 1, 1, 0, 1, 1, 1};
    TAP_OK(c.diag.count == 0 && !c.have_view && c.ex.bools &&
               ic_arrow_unpack_bools(&c.ex, unpacked) == 0 &&
               memcmp(unpacked, want, sizeof(want)) == 0,
           "bit-packed booleans are validated and unpacked from their bit offset, a byte each");
    p.array.length = 20; /* 22 bits: the third byte is not there */
    p.buffers[1] = (void *)(uintptr_t)0x10; /* and neither is the first */
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.ex.bools,
           "a values bitmap that cannot be read is arrow.buffers");
    good_pair(&p);
    p.array.length = 0;
    p.buffers[1] = NULL;
    c = check_pair(&p);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.shape[0] == 0 && c.view.data == 0,
           "an empty array may have no values buffer");
}

/* The C device data interface: the device fields, then the array as above on the CPU. */
static struct checked check_device(const struct pair *p, const struct ArrowDeviceArray *d)
{
    struct checked c;
    ic_diag_init(&c.diag);
    ic_arrow_check_device_structs(&p->schema, d, false, &c.diag, &c.ex, &c.view, &c.have_view,
                                  c.detail, sizeof(c.detail));
    return c;
}

static void test_device(void)
{
    struct pair p;
    struct ArrowDeviceArray d;
    good_pair(&p);
    memset(&d, 0, sizeof(d));
    d.array = p.array;
    d.device_type = ARROW_DEVICE_CPU;
    d.device_id = -1;
    struct checked c = check_device(&p, &d);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.shape[0] == 8 &&
               c.view.data == (uintptr_t)(values + 2),
           "a CPU device array with device_id -1 (Arrow's own CPU device): no findings, a view");
    d.device_type = 99;
    c = check_device(&p, &d);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_DEVICE) && !c.have_view,
           "device type 99 is arrow.device");
    d.device_type = ARROW_DEVICE_CUDA;
    c = check_device(&p, &d);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_DEVICE) && !c.have_view,
           "a CUDA device array with device_id -1 is arrow.device");
    d.device_id = 0;
    c = check_device(&p, &d);
    TAP_OK(c.diag.errors == 0 && has_warning(&c.diag, IC_RULE_ARROW_DEVICE) && !c.have_view,
           "a CUDA device array: its fields checked, its buffers not compared (a warning says so)");
    d.device_type = ARROW_DEVICE_CPU;
    d.reserved[1] = 42;
    c = check_device(&p, &d);
    TAP_OK(c.diag.errors == 0 && has_warning(&c.diag, IC_RULE_ARROW_DEVICE) && c.have_view,
           "reserved bytes that are not zero are an arrow.device warning");
    show_diag("reserved", &c.diag);
    c = check_device(&p, NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_STRUCTS) && !c.have_view,
           "no device array is arrow.structs");
}

/* Memory that is not there: findings against the producer, never a fault. */
static void test_guarded(void)
{
    size_t page;
    unsigned char *base = page_before_hole(&page);
    void *hole = base + page;
    struct pair p;
    struct checked c;

    good_pair(&p);
    ic_diag_init(&c.diag);
    ic_arrow_check_structs(hole, &p.array, false, &c.diag, &c.ex, &c.view, &c.have_view, c.detail,
                           sizeof(c.detail));
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_STRUCTS) && !c.have_view,
           "a schema in an unmapped page is arrow.structs");
    p.schema.format = hole;
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_SCHEMA),
           "a format in an unmapped page is arrow.schema");
    good_pair(&p);
    p.array.buffers = hole;
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.have_view,
           "a buffers array in an unmapped page is arrow.buffers");
    good_pair(&p);
    p.buffers[1] = base + page - 4 * 8; /* 4 of offset + length = 10 elements mapped */
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.have_view,
           "values that run past the mapped memory are arrow.buffers");
    show_diag("short values", &c.diag);
    good_pair(&p);
    p.buffers[0] = hole;
    c = check_pair(&p);
    TAP_OK(has_error(&c.diag, IC_RULE_ARROW_BUFFERS) && !c.have_view,
           "a validity bitmap in an unmapped page is arrow.buffers");
    munmap(base, page);
}

/* The counting callback: forwards the first call, counts the rest, and sees a release that
 * does not mark its struct released. */
static void test_watch(void)
{
    struct pair p;
    struct ic_arrow_watch_state state;
    int id = -1;

    good_pair(&p);
    array_releases = 0;
    TAP_OK(ic_arrow_watch(&p.array, false, &id) == 0 && p.array.release != count_array_release,
           "watching an array replaces its release callback");
    int again = -1;
    TAP_OK(ic_arrow_watch(&p.array, false, &again) == 0 && again == id,
           "watching it twice finds the same entry");
    /* a consumer's move, and two stray copies */
    struct ArrowArray moved = p.array, copy = p.array, late = p.array;
    p.array.release = NULL;
    moved.release(&moved);
    TAP_OK(array_releases == 1 && moved.release == NULL && moved.private_data == NULL,
           "the first call reaches the producer's release with its own private_data");
    copy.release(&copy);
    TAP_OK(array_releases == 1 && ic_arrow_watch_state(id, &state) == 0 && state.calls == 2 &&
               state.forwarded && !state.left_set && copy.release == NULL,
           "a second call is counted, not forwarded, and marks its copy released");
    ic_arrow_watch_release(id);
    TAP_OK(ic_arrow_watch_state(id, &state) == IC_ENOTFOUND,
           "an entry called already is retired when the case lets go of it");
    int unmatched = ic_arrow_watch_unmatched();
    late.release(&late);
    TAP_OK(ic_arrow_watch_unmatched() == unmatched + 1 && array_releases == 1,
           "a call after retirement is unmatched and not forwarded");

    good_pair(&p);
    p.array.release = sloppy_array_release;
    TAP_OK(ic_arrow_watch(&p.array, false, &id) == 0, "a sloppy release is watched");
    p.array.release(&p.array);
    TAP_OK(ic_arrow_watch_state(id, &state) == 0 && state.calls == 1 && state.left_set,
           "a release that leaves release set is seen");
    ic_arrow_watch_release(id);
    good_pair(&p);
    p.schema.release = NULL;
    TAP_OK(ic_arrow_watch(&p.schema, true, &id) == IC_EINVAL,
           "a released struct cannot be watched");
}

/* --- pyarrow, a real producer ---------------------------------------------------------------- */

static const char *producers =
    "import pyarrow as pa\n"
    "class Swapped:\n"
    "    def __init__(self, x): self.x = x\n"
    "    def __arrow_c_array__(self, requested_schema=None):\n"
    "        schema, array = self.x.__arrow_c_array__()\n"
    "        return array, schema\n"
    "class Listed(Swapped):\n"
    "    def __arrow_c_array__(self, requested_schema=None):\n"
    "        return list(self.x.__arrow_c_array__())\n"
    "class WrongRefusal:\n"
    "    def __init__(self, x): self.x = x\n"
    "    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):\n"
    "        if kwargs: raise TypeError('unexpected keyword')\n"
    "        return self.x.__arrow_c_device_array__(requested_schema)\n";

static PyObject *int32_array(void)
{
    return producer_eval("pa.array(list(range(10)), type=pa.int32()).slice(3, 5)");
}

/* pyarrow.array(proxy), then observe and finish as the exchange runs them. */
static bool import_through_proxy(PyObject *target, struct ic_export_record *rec)
{
    PyObject *proxy = proxy_open(&ic_arrow_ops, target, rec);
    PyObject *array_fn = producer_eval("pa.array");
    PyObject *imported = PyObject_CallOneArg(array_fn, proxy);
    bool ok = imported != NULL;
    PyErr_Clear();
    ic_arrow_ops.observe(proxy, rec);
    Py_XDECREF(imported);
    Py_DECREF(array_fn);
    ic_arrow_ops.finish(proxy, rec);
    proxy_close(proxy);
    return ok;
}

static void test_pyarrow(void)
{
    struct ic_export_record rec;
    PyObject *x = int32_array();
    TAP_OK(import_through_proxy(x, &rec) && rec.have_view && rec.diag.errors == 0 &&
               rec.view.dtype == IC_DTYPE_INT32 && rec.view.shape[0] == 5 && rec.consumed &&
               rec.watch_count == 2 && rec.lifetime.count == 0 && rec.lifetime_checked,
           "pyarrow -> pyarrow.array through the proxy: a valid export, moved and released once");
    show_diag("pyarrow export", &rec.diag);
    show_diag("pyarrow lifetime", &rec.lifetime);

    PyObject *swapped = producer_new("Swapped", Py_NewRef(x));
    import_through_proxy(swapped, &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_ARROW_CAPSULES) && !rec.have_view,
           "capsules in the wrong order are arrow.capsules");
    Py_DECREF(swapped);
    PyObject *listed = producer_new("Listed", Py_NewRef(x));
    import_through_proxy(listed, &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_ARROW_CAPSULES),
           "a list instead of a tuple is arrow.capsules");
    Py_DECREF(listed);

    PyObject *handle = NULL;
    TAP_OK(reference_import(&ic_arrow_ops, x, IC_VARIANT_NONE, &rec, &handle) == 0 && handle &&
               rec.have_view && rec.consumed && rec.diag.errors == 0 && rec.watch_count == 2,
           "interopcheck's own consumer takes pyarrow's export, its release callbacks watched");
    Py_XDECREF(handle);
    ic_arrow_ops.finish(x, &rec);
    TAP_OK(rec.lifetime.count == 0, "... and releases each struct exactly once");
    show_diag("reference lifetime", &rec.lifetime);

    TAP_OK(reference_import(&ic_arrow_device_ops, x, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               handle && rec.have_view && rec.diag.errors == 0 && rec.watch_count == 2,
           "interopcheck's own consumer takes pyarrow's CPU device array");
    Py_XDECREF(handle);
    ic_arrow_device_ops.finish(x, &rec);
    TAP_OK(rec.lifetime.count == 0, "... and releases it exactly once");
    TAP_OK(reference_import(&ic_arrow_device_ops, x, IC_VARIANT_ARROW_UNKNOWN_KEYWORD, &rec,
                            &handle) == 0 &&
               !handle && rec.producer_raised && rec.refusal_required && rec.diag.errors == 0 &&
               strcmp(rec.producer_exc_type, "NotImplementedError") == 0,
           "pyarrow refuses an unknown keyword with NotImplementedError");
    PyObject *wrong = producer_new("WrongRefusal", Py_NewRef(x));
    reference_import(&ic_arrow_device_ops, wrong, IC_VARIANT_ARROW_UNKNOWN_KEYWORD, &rec, &handle);
    TAP_OK(has_error(&rec.diag, IC_RULE_ARROW_DEVICE_KEYWORDS),
           "an unknown keyword refused with TypeError is arrow.device_keywords");
    Py_XDECREF(handle);
    Py_DECREF(wrong);
    Py_DECREF(x);
}

/* A consumer that moves the array out of its capsule and never releases it. */
static void test_leaking_consumer(void)
{
    struct ic_export_record rec;
    PyObject *x = int32_array();
    PyObject *proxy = proxy_open(&ic_arrow_ops, x, &rec);
    PyObject *pair = PyObject_CallMethod(proxy, "__arrow_c_array__", NULL);
    struct ArrowArray *source =
        pair ? PyCapsule_GetPointer(PyTuple_GET_ITEM(pair, 1), IC_ARROW_ARRAY_CAPSULE) : NULL;
    struct ArrowArray kept;
    if (!source)
        test_python_abort("pyarrow's export through the proxy");
    kept = *source;
    source->release = NULL;
    Py_DECREF(pair);
    ic_arrow_ops.observe(proxy, &rec);
    ic_arrow_ops.finish(proxy, &rec);
    bool charged = false;
    for (int i = 0; i < rec.lifetime.count; i++)
        charged = charged || (rec.lifetime.items[i].rule == IC_RULE_ARROW_RELEASE &&
                              rec.lifetime.items[i].side == IC_SIDE_CONSUMER &&
                              rec.lifetime.items[i].severity == IC_SEV_ERROR);
    TAP_OK(rec.consumed && charged,
           "a consumer that moves the array and never releases it is arrow.release, its own");
    show_diag("leak", &rec.lifetime);
    test_rule_fired(IC_RULE_ARROW_RELEASE);
    kept.release(&kept);
    proxy_close(proxy);
    Py_DECREF(x);
    TAP_OK(ops_registered(IC_PROTOCOL_ARROW, &ic_arrow_ops),
           "the ops are registered under their id");
}

int main(void)
{
    return test_python_main(producers, TAP_TESTS(test_rules, test_device, test_guarded, test_watch,
                                                 test_pyarrow, test_leaking_consumer));
}
