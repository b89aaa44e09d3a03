/* Unit tests of ic_array_interface: the typestr grammar, and the dict validator on dicts
 * built here around a C array (a real pointer) or a bytearray, valid and broken one rule at
 * a time; then the proxy and the reference consumer with a Python-defined producer. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#include <sys/mman.h>

#include "ic_array_interface.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

static double host_data[6] = {0, 1, 2, 3, 4, 5};

static void test_typestr(void)
{
    struct ic_typestr t;
    char why[96];
    bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

    TAP_OK(ic_typestr_parse("<f8", &t, why, sizeof(why)) == 0 && t.kind == 'f' && t.itemsize == 8 &&
               t.native == little && t.dtype == (little ? IC_DTYPE_FLOAT64 : IC_DTYPE_INVALID),
           "<f8 is float64");
    TAP_OK(ic_typestr_parse("|b1", &t, why, sizeof(why)) == 0 && t.native &&
               t.dtype == IC_DTYPE_BOOL,
           "|b1 is bool");
    TAP_OK(ic_typestr_parse(">i4", &t, why, sizeof(why)) == 0 && t.itemsize == 4 &&
               t.native == !little && (little ? t.dtype == IC_DTYPE_INVALID : true),
           ">i4 is a non-native int32 on a little-endian host");
    TAP_OK(ic_typestr_parse("<M8[ns]", &t, why, sizeof(why)) == 0 && t.kind == 'M' &&
               t.itemsize == 8 && strcmp(t.unit, "ns") == 0 && t.dtype == IC_DTYPE_INVALID,
           "<M8[ns] is a datetime with unit ns");
    TAP_OK(ic_typestr_parse("<m8[2s]", &t, why, sizeof(why)) == 0 && strcmp(t.unit, "2s") == 0,
           "<m8[2s] has a unit multiplier");
    TAP_OK(ic_typestr_parse("<U5", &t, why, sizeof(why)) == 0 && t.count == 5 && t.itemsize == 20,
           "<U5 counts characters: 20 bytes");
    TAP_OK(ic_typestr_parse("|O", &t, why, sizeof(why)) == 0 &&
               t.itemsize == (int64_t)sizeof(void *),
           "|O has the pointer size");
    TAP_OK(ic_typestr_parse("|V0", &t, why, sizeof(why)) == 0 && t.itemsize == 0,
           "|V0 (NumPy's empty void) parses");
    TAP_OK(ic_typestr_parse("<c16", &t, why, sizeof(why)) == 0 &&
               t.dtype == (little ? IC_DTYPE_COMPLEX128 : IC_DTYPE_INVALID),
           "<c16 is complex128");
    TAP_OK(ic_typestr_parse("=f4", &t, why, sizeof(why)) == 0 && !t.standard_order && t.native,
           "=f4 parses but is not one of the protocol's byte orders");

    static const char *const garbage[] = {"",         "f8",      "<x4",    "<f3",
                                          "<i",       "<f8junk", "<M8[",   "|b2",
                                          "bfloat16", "<i16",    "<M8[ns", "<S99999999999999999"};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        why[0] = '\0';
        int rc = ic_typestr_parse(garbage[i], &t, why, sizeof(why));
        TAP_OK(rc == IC_EINVAL && why[0], "\"%s\" is rejected (%s)", garbage[i], why);
    }
}

/* ---------------------------------------------------------------------------------------
 * The dict
 */

struct checked {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
};

static struct checked check(PyObject *value, PyObject *owner)
{
    struct checked out;
    ic_diag_init(&out.diag);
    out.have_view = false;
    ic_array_interface_check(value, owner, &out.diag, &out.view, &out.have_view);
    Py_XDECREF(value); /* every test dict is built for one check */
    return out;
}

/* The valid base dict: a 2x3 float64 array over host_data. */
static PyObject *base_dict(void)
{
    return Py_BuildValue("{s:(ii),s:s,s:(KO),s:i}", "shape", 2, 3, "typestr", "<f8", "data",
                         (unsigned long long)(uintptr_t)host_data, Py_False, "version", 3);
}

/* A pointer to memory that is not there: array_interface.data, and no view. */
static void test_unreadable_data(void)
{
    size_t page;
    unsigned char *base = page_before_hole(&page);
    uintptr_t hole = (uintptr_t)base + page;
    struct checked c = check(
        with(base_dict(), "data", Py_BuildValue("(KO)", (unsigned long long)hole, Py_False)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA) && !c.have_view,
           "a data pointer into an unmapped page is array_interface.data");
    show_diag("unmapped data", &c.diag);
    c = check(
        with(base_dict(), "data", Py_BuildValue("(KO)", (unsigned long long)(hole - 16), Py_False)),
        NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA) && !c.have_view,
           "elements that run past the mapped memory (2 of 6 there) are array_interface.data");
    munmap(base, page);
}

static void test_dict(void)
{
    struct checked c = check(base_dict(), NULL);
    TAP_OK(c.diag.count == 0 && c.have_view, "the base dict is valid");
    TAP_OK(c.view.data == (uintptr_t)host_data && c.view.ndim == 2 && c.view.strides[0] == 24 &&
               c.view.strides[1] == 8 && c.view.itemsize == 8 && !c.view.readonly &&
               c.view.readonly_known && c.view.device_type == IC_DEVICE_CPU,
           "its view: the pointer, C strides (24, 8), writable, CPU");

    c = check(with(base_dict(), "data",
                   Py_BuildValue("(KO)", (unsigned long long)(uintptr_t)host_data, Py_True)),
              NULL);
    TAP_OK(c.diag.count == 0 && c.view.readonly, "data[1] True makes it read-only");
    c = check(with(base_dict(), "strides", Py_BuildValue("(ii)", 8, 16)), NULL);
    TAP_OK(c.diag.count == 0 && c.view.strides[0] == 8 && c.view.strides[1] == 16,
           "explicit (Fortran) strides are used");
    c = check(with(base_dict(), "strides", Py_NewRef(Py_None)), NULL);
    TAP_OK(c.diag.count == 0 && c.view.strides[0] == 24, "strides None means C strides");

    /* 4.5.1 */
    c = check(PyList_New(0), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT) && !c.have_view, "a list is no dict");
    c = check(with(base_dict(), "version", NULL), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT), "a missing version is an error");
    c = check(with(base_dict(), "version", PyLong_FromLong(2)), NULL);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT) && c.diag.errors == 0,
           "version 2 is only a warning");
    c = check(with(base_dict(), "version", PyUnicode_FromString("3")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT), "a str version is an error");
    c = check(with(base_dict(), "shape", NULL), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT) && !c.have_view,
           "a missing shape is an error");
    c = check(with(base_dict(), "typestr", NULL), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DICT), "a missing typestr is an error");

    /* 4.5.2 */
    c = check(with(base_dict(), "shape", Py_BuildValue("[ii]", 2, 3)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE), "a list shape is an error");
    c = check(with(base_dict(), "shape", Py_BuildValue("(ii)", 2, -3)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE) && !c.have_view,
           "a negative extent is an error");
    PyObject *big = PyLong_FromString("1180591620717411303424", NULL, 10); /* 2**70 */
    c = check(with(base_dict(), "shape", Py_BuildValue("(N)", big)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE),
           "an extent of 2**70 does not fit in int64");
    show_diag("2**70", &c.diag);
    c = check(with(base_dict(), "shape", Py_BuildValue("(LL)", (long long)(INT64_MAX / 2), 4LL)),
              NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE),
           "an overflowing element count is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(i)", 8)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE),
           "one stride for two dimensions is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(is)", 24, "8")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE), "a str stride is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(Li)", (long long)INT64_MAX, 8)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_SHAPE), "a span that overflows is an error");

    /* 4.5.3 */
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("<f3")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR) && !c.have_view,
           "typestr <f3 is an error");
    show_diag("<f3", &c.diag);
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("bfloat16")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR), "typestr bfloat16 is an error");
    c = check(with(base_dict(), "typestr", PyLong_FromLong(8)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR), "an int typestr is an error");
    c = check(with(base_dict(), "typestr", PyBytes_FromString("<f8")), NULL);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR) && c.diag.errors == 0,
           "a bytes typestr is a warning");
    c = check(with(base_dict(), "descr", Py_BuildValue("[(ss)]", "", "<f8")), NULL);
    TAP_OK(c.diag.count == 0, "the default descr matches");
    c = check(with(base_dict(), "descr", Py_BuildValue("[(ss)]", "", "<f4")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR),
           "a 4-byte descr for an 8-byte typestr is an error");
    PyObject *record = with(base_dict(), "typestr", PyUnicode_FromString("|V8"));
    c = check(
        with(record, "descr", Py_BuildValue("[(ss),((ss)s)]", "a", "<f4", "title", "b", "<i4")),
        NULL);
    TAP_OK(c.diag.count == 0 && c.view.dtype == IC_DTYPE_INVALID && c.view.itemsize == 8,
           "a two-field record descr with a titled field totals 8 bytes");
    c = check(with(base_dict(), "descr", Py_BuildValue("[(ssi)]", "", "<f4", 2)), NULL);
    TAP_OK(c.diag.count == 0, "a sub-array field (f4, 2) totals 8 bytes");
    c = check(with(base_dict(), "descr", PyUnicode_FromString("<f8")), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_TYPESTR), "a str descr is an error");

    /* 4.5.4 */
    c = check(with(base_dict(), "data", Py_BuildValue("(KO)", 0ULL, Py_False)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA) && !c.have_view,
           "pointer 0 with 48 bytes is an error");
    PyObject *empty = with(base_dict(), "shape", Py_BuildValue("(ii)", 0, 3));
    c = check(with(empty, "data", Py_BuildValue("(KO)", 0ULL, Py_False)), NULL);
    TAP_OK(c.diag.count == 0 && c.have_view, "pointer 0 for an empty array is fine");
    c = check(with(base_dict(), "data", Py_BuildValue("(KOi)", 8ULL, Py_False, 1)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA), "a 3-tuple data is an error");
    c = check(with(base_dict(), "data", Py_BuildValue("(iO)", -8, Py_False)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA), "a negative pointer is an error");
    c = check(with(base_dict(), "data", PyLong_FromLong(5)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA), "an int data is an error");
    c = check(with(base_dict(), "data",
                   Py_BuildValue("(Ki)", (unsigned long long)(uintptr_t)host_data, 1)),
              NULL);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA) && c.diag.errors == 0 &&
               c.view.readonly,
           "an int readonly flag is a warning and read as true");
    c = check(with(base_dict(), "offset", PyLong_FromLong(8)), NULL);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA) && c.diag.errors == 0 &&
               c.view.data == (uintptr_t)host_data,
           "offset with a tuple is ignored, with a warning");

    PyObject *bytes = PyByteArray_FromStringAndSize(NULL, 48);
    char *start = PyByteArray_AsString(bytes);
    PyObject *d = Py_BuildValue("{s:(i),s:s,s:O,s:i,s:i}", "shape", 5, "typestr", "<f8", "data",
                                bytes, "offset", 8, "version", 3);
    c = check(d, NULL);
    TAP_OK(c.diag.count == 0 && c.view.data == (uintptr_t)start + 8 && !c.view.readonly,
           "buffer data with offset 8 starts 8 bytes in");
    d = Py_BuildValue("{s:(i),s:s,s:O,s:i,s:i}", "shape", 6, "typestr", "<f8", "data", bytes,
                      "offset", 8, "version", 3);
    c = check(d, NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA),
           "6 doubles after offset 8 overrun 48 bytes");
    show_diag("overrun", &c.diag);
    d = Py_BuildValue("{s:(i),s:s,s:O,s:i,s:i}", "shape", 5, "typestr", "<f8", "data", bytes,
                      "offset", -8, "version", 3);
    c = check(d, NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA), "a negative offset is an error");
    d = Py_BuildValue("{s:(i),s:s,s:i}", "shape", 6, "typestr", "<f8", "version", 3);
    c = check(d, bytes);
    TAP_OK(c.diag.count == 0 && c.view.data == (uintptr_t)start,
           "no data: the owner's buffer is the data");
    d = Py_BuildValue("{s:(i),s:s,s:O,s:i}", "shape", 6, "typestr", "<f8", "data", Py_None,
                      "version", 3);
    PyObject *not_a_buffer = PyLong_FromLong(1);
    c = check(d, not_a_buffer);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_DATA),
           "data None with an owner that exports no buffer is an error");
    Py_DECREF(not_a_buffer);
    PyObject *frozen = PyBytes_FromStringAndSize(NULL, 48);
    d = Py_BuildValue("{s:(i),s:s,s:O,s:i}", "shape", 6, "typestr", "<f8", "data", frozen,
                      "version", 3);
    c = check(d, NULL);
    TAP_OK(c.diag.count == 0 && c.view.readonly, "bytes data is read-only");
    Py_DECREF(frozen);
    Py_DECREF(bytes);
}

/* ---------------------------------------------------------------------------------------
 * Masks, the proxy and the reference consumer need Python objects with the attribute
 */

static const char producers_code[] = "class Iface:\n"
                                     "    def __init__(self, d):\n"
                                     "        self.d = d\n"
                                     "    @property\n"
                                     "    def __array_interface__(self):\n"
                                     "        return self.d\n"
                                     "\n"
                                     "class Failing:\n"
                                     "    @property\n"
                                     "    def __array_interface__(self):\n"
                                     "        raise RuntimeError('no interface today')\n";

static void test_mask(void)
{
    static unsigned char valid[3] = {1, 0, 1};
    PyObject *mask_dict =
        Py_BuildValue("{s:(i),s:s,s:(KO),s:i}", "shape", 3, "typestr", "|b1", "data",
                      (unsigned long long)(uintptr_t)valid, Py_False, "version", 3);
    struct checked c = check(with(base_dict(), "mask", producer_new("Iface", mask_dict)), NULL);
    TAP_OK(has_warning(&c.diag, IC_RULE_ARRAY_INTERFACE_MASK) && c.diag.errors == 0 && c.have_view,
           "a (3,) mask broadcasts to (2, 3): only the NumPy-ignores-it warning");
    mask_dict = Py_BuildValue("{s:(i),s:s,s:(KO),s:i}", "shape", 4, "typestr", "|b1", "data",
                              (unsigned long long)(uintptr_t)valid, Py_False, "version", 3);
    c = check(with(base_dict(), "mask", producer_new("Iface", mask_dict)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_MASK), "a (4,) mask does not broadcast");
    c = check(with(base_dict(), "mask", PyLong_FromLong(1)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_MASK), "an int mask is an error");
    mask_dict = Py_BuildValue("{s:(i),s:s,s:i}", "shape", 3, "typestr", "|b7", "version", 3);
    c = check(with(base_dict(), "mask", producer_new("Iface", mask_dict)), NULL);
    TAP_OK(has_error(&c.diag, IC_RULE_ARRAY_INTERFACE_MASK),
           "a mask with an invalid interface is an error");
    show_diag("invalid mask", &c.diag);
    c = check(with(base_dict(), "mask", Py_NewRef(Py_None)), NULL);
    TAP_OK(c.diag.count == 0, "mask None is fine");
}

static void test_ops(void)
{
    struct ic_export_record rec;
    PyObject *dict = base_dict();
    PyObject *target = producer_new("Iface", Py_NewRef(dict));

    PyObject *proxy = proxy_open(&ic_array_interface_ops, target, &rec);
    PyObject *got = PyObject_GetAttrString(proxy, "__array_interface__");
    TAP_OK(got == dict, "the proxy returns the producer's dict unchanged");
    TAP_OK(rec.export_calls == 1 && rec.have_view && rec.view.data == (uintptr_t)host_data &&
               rec.diag.count == 0 && rec.zero_copy_known,
           "and records the export (%s)", rec.detail);
    Py_XDECREF(got);
    got = PyObject_GetAttrString(proxy, "__array_interface__");
    TAP_OK(rec.export_calls == 2, "each read is counted");
    Py_XDECREF(got);
    TAP_OK(!PyObject_HasAttrString(proxy, "__array_struct__") &&
               !PyObject_HasAttrString(proxy, "__dlpack__") && !PyObject_CheckBuffer(proxy),
           "the proxy offers nothing else");
    proxy_close(proxy);

    PyObject *handle = NULL;
    TAP_OK(reference_import(&ic_array_interface_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               handle == dict,
           "the reference consumer's handle is the dict");
    TAP_OK(rec.have_view && rec.diag.errors == 0 && strcmp(rec.request, "__array_interface__") == 0,
           "and its view is recorded");
    Py_XDECREF(handle);
    Py_DECREF(target);

    PyObject *broken = PyDict_Copy(dict);
    PyDict_DelItemString(broken, "version");
    target = producer_new("Iface", broken);
    TAP_OK(passes_through_proxy(&ic_array_interface_ops, target, "__array_interface__", &rec) &&
               ic_export_diag_has_error(&rec.diag, IC_RULE_ARRAY_INTERFACE_DICT),
           "a broken dict passes through the proxy and is recorded as an error");
    Py_DECREF(target);

    target = producer_new("Failing", NULL);
    TAP_OK(raises_through_proxy(&ic_array_interface_ops, target, "__array_interface__",
                                PyExc_RuntimeError, &rec) &&
               rec.producer_raised && strcmp(rec.producer_exc_type, "RuntimeError") == 0,
           "the producer's exception reaches the consumer and is recorded");
    TAP_OK(reference_import(&ic_array_interface_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               !handle && rec.producer_raised && !PyErr_Occurred(),
           "the reference consumer records it and leaves nothing pending");
    Py_DECREF(target);
    Py_DECREF(dict);

    TAP_OK(ops_registered(IC_PROTOCOL_ARRAY_INTERFACE, &ic_array_interface_ops),
           "the ops are registered under their id");
}

int main(void)
{
    test_typestr();
    return test_python_main(producers_code,
                            TAP_TESTS(test_dict, test_unreadable_data, test_mask, test_ops));
}
