/* Unit tests of ic_buffer: the format parser, the request names, the validator on Py_buffer
 * structs filled by hand (one broken rule at a time), and the proxy and reference consumer
 * with CPython's exporters (bytearray, bytes, array.array) and with a C exporter of this test
 * that breaks the rules on purpose. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "ic_buffer.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "ic_proxy.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

static void test_format(void)
{
    struct ic_buffer_format f;
    bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

    TAP_OK(ic_buffer_format_parse("f", &f) == 0 && f.itemsize == 4 && f.dtype == IC_DTYPE_FLOAT32,
           "f is float32");
    TAP_OK(ic_buffer_format_parse("<d", &f) == 0 && f.itemsize == 8 &&
               f.dtype == (little ? IC_DTYPE_FLOAT64 : IC_DTYPE_INVALID),
           "<d is float64 on a little-endian host");
    TAP_OK(ic_buffer_format_parse(">i", &f) == 0 && f.itemsize == 4 && f.native_order == !little,
           ">i is a big-endian int32");
    TAP_OK(ic_buffer_format_parse("=l", &f) == 0 && f.itemsize == 4 && f.dtype == IC_DTYPE_INT32,
           "=l has the standard size 4");
    TAP_OK(ic_buffer_format_parse("l", &f) == 0 && f.itemsize == (int64_t)sizeof(long) &&
               f.dtype == (sizeof(long) == 8 ? IC_DTYPE_INT64 : IC_DTYPE_INT32),
           "l has the native size of long (%lld)", (long long)f.itemsize);
    TAP_OK(ic_buffer_format_parse("@L", &f) == 0 &&
               f.dtype == (sizeof(long) == 8 ? IC_DTYPE_UINT64 : IC_DTYPE_UINT32),
           "@L is unsigned long");
    TAP_OK(ic_buffer_format_parse("q", &f) == 0 && f.dtype == IC_DTYPE_INT64, "q is int64");
    TAP_OK(ic_buffer_format_parse("?", &f) == 0 && f.itemsize == 1 && f.dtype == IC_DTYPE_BOOL,
           "? is bool");
    TAP_OK(ic_buffer_format_parse("e", &f) == 0 && f.dtype == IC_DTYPE_FLOAT16, "e is float16");
    TAP_OK(ic_buffer_format_parse("Zf", &f) == 0 && f.itemsize == 8 &&
               f.dtype == IC_DTYPE_COMPLEX64,
           "Zf is complex64");
    TAP_OK(ic_buffer_format_parse("<Zd", &f) == 0 && f.itemsize == 16 &&
               f.dtype == (little ? IC_DTYPE_COMPLEX128 : IC_DTYPE_INVALID),
           "<Zd is complex128");
    TAP_OK(ic_buffer_format_parse("B", &f) == 0 && f.dtype == IC_DTYPE_UINT8, "B is uint8");
    TAP_OK(ic_buffer_format_parse(">B", &f) == 0 && f.dtype == IC_DTYPE_UINT8,
           "byte order does not matter for one byte");
    TAP_OK(ic_buffer_format_parse("1f", &f) == 0 && f.itemsize == 4, "1f is one float");
    TAP_OK(ic_buffer_format_parse("c", &f) == 0 && f.dtype == IC_DTYPE_INVALID && f.itemsize == 1,
           "c is a 1-byte char the tester does not exchange");
    TAP_OK(ic_buffer_format_parse("3f", &f) == 0 && f.count == 3 && f.itemsize == 12 &&
               f.dtype == IC_DTYPE_INVALID,
           "3f is 12 bytes and no dtype");
    TAP_OK(ic_buffer_format_parse("2w", &f) == 0 && f.itemsize == 8, "2w (NumPy's <U2) is 8 bytes");
    TAP_OK(ic_buffer_format_parse("0s", &f) == 0 && f.itemsize == 0, "0s is 0 bytes");
    TAP_OK(ic_buffer_format_parse("ff", &f) == IC_EUNSUPPORTED, "ff is compound");
    TAP_OK(ic_buffer_format_parse("T{i:x:}", &f) == IC_EUNSUPPORTED, "T{...} is compound");
    TAP_OK(ic_buffer_format_parse("y", &f) == IC_EINVAL, "y is no format code");
    TAP_OK(ic_buffer_format_parse("=n", &f) == IC_EINVAL, "n has no standard size");
    TAP_OK(ic_buffer_format_parse("", &f) == IC_EINVAL, "an empty format is invalid");

    char name[64];
    ic_buffer_flags_name(PyBUF_RECORDS_RO, name, sizeof(name));
    TAP_OK(strcmp(name, "PyBUF_RECORDS_RO") == 0, "RECORDS_RO is named (%s)", name);
    ic_buffer_flags_name(PyBUF_C_CONTIGUOUS | PyBUF_FORMAT, name, sizeof(name));
    TAP_OK(strcmp(name, "PyBUF_C_CONTIGUOUS | PyBUF_FORMAT") == 0, "composed name (%s)", name);
    ic_buffer_flags_name(PyBUF_ND | PyBUF_WRITABLE, name, sizeof(name));
    TAP_OK(strcmp(name, "PyBUF_CONTIG") == 0, "ND | WRITABLE is PyBUF_CONTIG (%s)", name);
    ic_buffer_flags_name(PyBUF_SIMPLE, name, sizeof(name));
    TAP_OK(strcmp(name, "PyBUF_SIMPLE") == 0, "0 is PyBUF_SIMPLE (%s)", name);
    ic_buffer_flags_name(PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT, name, sizeof(name));
    TAP_OK(strcmp(name, "PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT") == 0,
           "composed name (%s)", name);
}

/* ---------------------------------------------------------------------------------------
 * Hand-filled buffers
 */

static float data[6];
static Py_ssize_t shape23[2] = {2, 3}, c_strides[2] = {12, 4}, f_strides[2] = {4, 8};

static Py_buffer good_buffer(void)
{
    Py_buffer b = {.buf = data,
                   .obj = Py_None,
                   .len = 24,
                   .itemsize = 4,
                   .readonly = 0,
                   .ndim = 2,
                   .format = "f",
                   .shape = shape23,
                   .strides = c_strides,
                   .suboffsets = NULL,
                   .internal = NULL};
    return b;
}

/* The pointer fields a buffer may leave NULL, for good_buffer_without */
enum { NO_SHAPE = 1, NO_STRIDES = 2, NO_FORMAT = 4 };

/* The good buffer with the fields `dropped` names left NULL. */
static Py_buffer good_buffer_without(int dropped)
{
    Py_buffer b = good_buffer();
    b.shape = (dropped & NO_SHAPE) ? NULL : b.shape;
    b.strides = (dropped & NO_STRIDES) ? NULL : b.strides;
    b.format = (dropped & NO_FORMAT) ? NULL : b.format;
    return b;
}

/* The good buffer with `format` for its 4-byte items. */
static Py_buffer good_buffer_with_format(const char *format)
{
    Py_buffer b = good_buffer();
    b.format = (char *)format;
    return b;
}

struct checked {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
};

static struct checked check(Py_buffer b, int flags)
{
    struct checked out;
    ic_diag_init(&out.diag);
    out.have_view = false;
    ic_buffer_check(&b, flags, &out.diag, &out.view, &out.have_view);
    return out;
}

static void test_rules(void)
{
    struct checked c = check(good_buffer(), PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0 && c.have_view, "a correct RECORDS_RO buffer has no findings");
    TAP_OK(c.view.data == (uintptr_t)data && c.view.ndim == 2 && c.view.strides[0] == 12 &&
               c.view.dtype == IC_DTYPE_FLOAT32 && !c.view.readonly && c.view.readonly_known,
           "its view is float32 (2, 3) with strides (12, 4)");
    c = check(good_buffer(), PyBUF_RECORDS);
    TAP_OK(c.diag.count == 0, "and a correct writable RECORDS buffer");
    c = check(good_buffer_without(NO_STRIDES | NO_FORMAT), PyBUF_ND);
    TAP_OK(c.diag.count == 0 && c.view.strides[0] == 12 && c.view.dtype == IC_DTYPE_INVALID,
           "an ND buffer has C strides and, without FORMAT, no dtype");
    Py_buffer b = good_buffer_without(NO_SHAPE | NO_STRIDES | NO_FORMAT);
    b.ndim = 1;
    b.itemsize = 1;
    c = check(b, PyBUF_SIMPLE);
    TAP_OK(c.diag.count == 0 && c.view.ndim == 1 && c.view.shape[0] == 24 && c.view.itemsize == 1,
           "a SIMPLE buffer is 24 raw bytes");

    /* 5.1.1 */
    b = good_buffer();
    b.obj = NULL;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FIELDS),
           "obj NULL after a successful get is an error");
    b = good_buffer();
    b.ndim = 65;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FIELDS) && !c.have_view, "ndim 65 is an error");
    b = good_buffer();
    b.ndim = 0;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SCALAR), "ndim 0 with shape and strides is an error");
    b = good_buffer_without(NO_SHAPE | NO_STRIDES | NO_FORMAT);
    b.ndim = 0;
    c = check(b, PyBUF_SIMPLE);
    TAP_OK(has_warning(&c.diag, IC_RULE_BUFFER_SCALAR) && c.diag.errors == 0 &&
               c.view.shape[0] == 6,
           "NumPy's ndim 0 for a SIMPLE request is a warning; the view is 6 raw items");

    /* 5.1.2 */
    b = good_buffer();
    b.len = 20;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SIZE) && !c.have_view,
           "len 20 for 2x3 floats is an error");
    show_diag("bad len", &c.diag);
    b = good_buffer();
    b.itemsize = 0;
    c = check(b, PyBUF_STRIDED_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FIELDS), "itemsize 0 is an error");
    b = good_buffer();
    b.itemsize = (Py_ssize_t)0xff000002; /* found by fuzz_buffer_check: a view's int wrapped */
    b.format = NULL;
    c = check(b, PyBUF_STRIDED_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FIELDS) && !c.have_view,
           "an itemsize beyond INT32_MAX is an error, and no view is made of it");
    Py_ssize_t negative[2] = {2, -3};
    b = good_buffer();
    b.shape = negative;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SIZE), "a negative extent is an error");

    /* 5.1.3 */
    c = check(good_buffer_without(NO_FORMAT), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FORMAT_REQUEST),
           "FORMAT requested but format NULL is an error");
    c = check(good_buffer(), PyBUF_STRIDED_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FORMAT_REQUEST),
           "a format without FORMAT requested is an error");
    c = check(good_buffer_with_format("d"), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FORMAT) && c.view.dtype == IC_DTYPE_INVALID,
           "format d with itemsize 4 is an error");
    c = check(good_buffer_with_format("y"), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FORMAT), "format y is an error");
    c = check(good_buffer_with_format("2h"), PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0 && c.view.dtype == IC_DTYPE_INVALID, "format 2h is 4 bytes");
    c = check(good_buffer_with_format("3h"), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FORMAT), "format 3h is 6 bytes, not 4");
    c = check(good_buffer_with_format("hh"), PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0, "format hh is 4 bytes by the struct module");
    c = check(good_buffer_with_format("T{h:a:h:b:}"), PyBUF_RECORDS_RO);
    TAP_OK(has_warning(&c.diag, IC_RULE_BUFFER_FORMAT) && c.diag.errors == 0,
           "a T{} format the struct module cannot size is a warning");

    /* 5.1.4 */
    c = check(good_buffer_without(NO_SHAPE | NO_STRIDES), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES),
           "ND requested but shape NULL is an error");
    c = check(good_buffer_without(NO_STRIDES | NO_FORMAT), PyBUF_SIMPLE);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES),
           "a shape for a SIMPLE request is an error");
    c = check(good_buffer_without(NO_FORMAT), PyBUF_ND);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES),
           "strides when only ND was requested is an error");
    c = check(good_buffer_without(NO_STRIDES), PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES),
           "STRIDES requested but strides NULL is an error");
    Py_ssize_t suboffsets[2] = {-1, -1};
    b = good_buffer();
    b.suboffsets = suboffsets;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES),
           "suboffsets without INDIRECT are an error");
    c = check(b, PyBUF_FULL_RO);
    TAP_OK(has_warning(&c.diag, IC_RULE_BUFFER_SHAPE_STRIDES) && c.diag.errors == 0 && c.have_view,
           "all-negative suboffsets are a warning");

    /* 5.1.5 */
    b = good_buffer();
    b.readonly = 1;
    c = check(b, PyBUF_RECORDS);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_WRITABLE),
           "read-only for a WRITABLE request is an error");
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0 && c.view.readonly, "read-only for a _RO request is fine");

    /* 5.1.6 */
    b = good_buffer();
    b.strides = f_strides;
    c = check(b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_CONTIGUOUS),
           "Fortran strides for a C_CONTIGUOUS request");
    c = check(good_buffer(), PyBUF_F_CONTIGUOUS | PyBUF_FORMAT);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_CONTIGUOUS), "C strides for an F_CONTIGUOUS request");
    c = check(b, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT);
    TAP_OK(c.diag.count == 0, "Fortran strides answer ANY_CONTIGUOUS");
    Py_ssize_t reversed[2] = {-12, 4};
    b = good_buffer();
    b.strides = reversed;
    b.buf = data + 3;
    c = check(b, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_CONTIGUOUS),
           "flipped rows do not answer ANY_CONTIGUOUS");
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0 && c.have_view, "but are fine for a strided request");

    /* 5.1.7 */
    Py_ssize_t odd[2] = {12, 6};
    b = good_buffer();
    b.strides = odd;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_warning(&c.diag, IC_RULE_BUFFER_STRIDES) && c.diag.errors == 0,
           "a stride that is not a multiple of itemsize is a warning");
    Py_ssize_t far[2] = {PY_SSIZE_T_MAX, 4};
    b = good_buffer();
    b.strides = far;
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_STRIDES) && !c.have_view,
           "an overflowing span is an error");
}

/* A page that is mapped, followed by one that is not: the exporters below point into the
 * hole. Made once; the hole stays unmapped for the test's life. */
static unsigned char *hole(void)
{
    static unsigned char *mapped_page;
    static size_t page_size;
    if (!mapped_page)
        mapped_page = page_before_hole(&page_size);
    return mapped_page + page_size;
}

/* Checks `b` for `flags`, a buffer with a field that points at memory that is not there:
 * buffer.fields, and no view. */
static struct checked check_unmapped(Py_buffer b, int flags, const char *what)
{
    struct checked c = check(b, flags);
    TAP_OK(has_error(&c.diag, IC_RULE_BUFFER_FIELDS) && !c.have_view, "%s", what);
    return c;
}

/* Fields a producer points at memory that is not there: each is buffer.fields, no view. */
static void test_guarded_fields(void)
{
    Py_buffer b = good_buffer();
    b.format = (char *)hole();
    struct checked c = check_unmapped(
        b, PyBUF_RECORDS_RO, "a format string in an unmapped page is buffer.fields, and no view");
    show_diag("unmapped format", &c.diag);
    memcpy(hole() - 2, "<f", 2); /* a format without its NUL before the hole */
    b.format = (char *)hole() - 2;
    check_unmapped(b, PyBUF_RECORDS_RO,
                   "a format that runs into an unmapped page is buffer.fields");
    memcpy(hole() - 2, "f", 2); /* one that ends right before it */
    c = check(b, PyBUF_RECORDS_RO);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.dtype == IC_DTYPE_FLOAT32,
           "a format that ends right before an unmapped page is read whole");

    b = good_buffer();
    b.shape = (Py_ssize_t *)hole();
    check_unmapped(b, PyBUF_RECORDS_RO, "a shape array in an unmapped page is buffer.fields");
    b = good_buffer();
    b.strides = (Py_ssize_t *)(hole() - sizeof(Py_ssize_t)); /* strides[1] in the hole */
    check_unmapped(b, PyBUF_RECORDS_RO,
                   "a strides array running into an unmapped page is buffer.fields");
    b = good_buffer();
    b.suboffsets = (Py_ssize_t *)hole();
    check_unmapped(b, PyBUF_FULL_RO, "a suboffsets array in an unmapped page is buffer.fields");

    b = good_buffer();
    b.buf = hole();
    c = check_unmapped(b, PyBUF_RECORDS_RO, "buf in an unmapped page is buffer.fields");
    show_diag("unmapped buf", &c.diag);
    b.buf = hole() - 8; /* 2 of the 6 floats mapped: len promises more than there is */
    check_unmapped(b, PyBUF_RECORDS_RO,
                   "a buffer shorter than len (it runs into an unmapped page) is buffer.fields");
}

/* ---------------------------------------------------------------------------------------
 * A C exporter that breaks rules on purpose
 */

enum exporter_mode {
    MODE_GOOD,
    MODE_BAD_LEN,
    MODE_BAD_FORMAT,
    MODE_ALWAYS_READONLY, /* read-only even when WRITABLE was requested */
    MODE_ALWAYS_STRIDES,  /* strides even when only ND was requested */
    MODE_FORTRAN,         /* Fortran strides whatever was requested */
    MODE_FAIL_KEEP_OBJ,   /* BufferError, but view->obj left set */
    MODE_FAIL_SILENT,     /* -1 without an exception */
    MODE_FAIL_VALUE_ERROR,
    MODE_UNMAPPED_BUF,   /* buf points at an unmapped page */
    MODE_UNMAPPED_SHAPE, /* shape points at an unmapped page */
};

struct exporter {
    PyObject_HEAD enum exporter_mode mode;
    int exports; /* gets not yet released */
    float data[6];
    Py_ssize_t shape[2];
    Py_ssize_t strides[2];
};

static int exporter_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    struct exporter *e = (struct exporter *)self;
    switch (e->mode) {
    case MODE_FAIL_KEEP_OBJ:
        PyErr_SetString(PyExc_BufferError, "refused");
        view->obj = self; /* the bug under test (borrowed: nobody releases it) */
        return -1;
    case MODE_FAIL_SILENT:
        view->obj = NULL;
        return -1;
    case MODE_FAIL_VALUE_ERROR:
        PyErr_SetString(PyExc_ValueError, "refused the NumPy way");
        view->obj = NULL;
        return -1;
    default:
        break;
    }
    bool nd = (flags & PyBUF_ND) == PyBUF_ND, strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    e->shape[0] = 2;
    e->shape[1] = 3;
    e->strides[0] = e->mode == MODE_FORTRAN ? 4 : 12;
    e->strides[1] = e->mode == MODE_FORTRAN ? 8 : 4;
    view->buf = e->mode == MODE_UNMAPPED_BUF ? (void *)hole() : e->data;
    view->obj = Py_NewRef(self);
    view->len = e->mode == MODE_BAD_LEN ? 20 : 24;
    view->itemsize = 4;
    view->readonly = e->mode == MODE_ALWAYS_READONLY;
    view->ndim = nd ? 2 : 1;
    view->format = (flags & PyBUF_FORMAT) ? (e->mode == MODE_BAD_FORMAT ? "d" : "f") : NULL;
    view->shape = !nd ? NULL : e->mode == MODE_UNMAPPED_SHAPE ? (Py_ssize_t *)hole() : e->shape;
    view->strides = strided || (nd && e->mode == MODE_ALWAYS_STRIDES) ? e->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    e->exports++;
    return 0;
}

static void exporter_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    ((struct exporter *)self)->exports--;
}

static PyObject *exporter_type;

static struct exporter *exporter_new(enum exporter_mode mode)
{
    if (!exporter_type) {
        PyType_Slot slots[] = {
            {Py_bf_getbuffer, (void *)exporter_getbuffer},
            {Py_bf_releasebuffer, (void *)exporter_releasebuffer},
            {0, NULL},
        };
        PyType_Spec spec = {"test_buffer.Exporter", (int)sizeof(struct exporter), 0,
                            Py_TPFLAGS_DEFAULT, slots};
        exporter_type = PyType_FromSpec(&spec);
        if (!exporter_type)
            abort();
    }
    struct exporter *e = (struct exporter *)PyType_GenericAlloc((PyTypeObject *)exporter_type, 0);
    if (!e)
        abort();
    e->mode = mode;
    return e;
}

/* Asks `obj` for a buffer with `flags` and releases it at once; returns the get's result. */
static int get_and_release(PyObject *obj, int flags)
{
    Py_buffer view;
    memset(&view, 0, sizeof(view));
    if (PyObject_GetBuffer(obj, &view, flags) < 0)
        return -1;
    PyBuffer_Release(&view);
    return 0;
}

static void test_proxy(void)
{
    struct ic_export_record rec;
    PyObject *target = PyByteArray_FromStringAndSize("abcdefgh", 8);

    PyObject *proxy = proxy_open(&ic_buffer_ops, target, &rec);
    PyObject *view = PyMemoryView_FromObject(proxy);
    TAP_OK(view && ((struct ic_proxy *)proxy)->acquired == 1 && rec.acquired == 1,
           "memoryview(proxy) gets one buffer through the proxy");
    TAP_OK(strcmp(rec.request, "PyBUF_FULL_RO") == 0 && rec.have_view && rec.diag.count == 0 &&
               rec.view.itemsize == 1 && rec.view.shape[0] == 8,
           "memoryview asks PyBUF_FULL_RO and gets 8 bytes (%s)", rec.detail);
    Py_buffer inner;
    TAP_OK(PyObject_GetBuffer(view, &inner, PyBUF_SIMPLE) == 0 &&
               inner.buf == PyByteArray_AsString(target),
           "the consumer sees the producer's memory");
    PyBuffer_Release(&inner);
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    TAP_OK(released && ((struct ic_proxy *)proxy)->released == 1 && rec.released == 1,
           "memoryview.release() releases through the proxy");
    Py_XDECREF(released);
    Py_XDECREF(view);
    ic_buffer_ops.finish(proxy, &rec);
    TAP_OK(rec.lifetime_checked && rec.lifetime.count == 0, "one get, one release: no finding");

    /* a consumer that gets twice and releases once */
    Py_buffer first, second;
    TAP_OK(PyObject_GetBuffer(proxy, &first, PyBUF_RECORDS) == 0 &&
               PyObject_GetBuffer(proxy, &second, PyBUF_RECORDS_RO) == 0,
           "a consumer can get the buffer several times (writable, then read-only)");
    TAP_OK(first.obj == proxy && first.buf == PyByteArray_AsString(target),
           "the consumer's buffer names the proxy as obj");
    PyBuffer_Release(&first);
    ic_buffer_ops.finish(proxy, &rec);
    TAP_OK(has_error(&rec.lifetime, IC_RULE_BUFFER_RELEASE), "a get without a release is an error");
    show_diag("leak", &rec.lifetime);
    PyBuffer_Release(&second);
    ic_proxy_detach(proxy);
    TAP_OK(((struct ic_proxy *)proxy)->released == 3, "a release after detaching is still counted");
    Py_DECREF(proxy);
    Py_DECREF(target);

    /* a read-only exporter refuses a writable request with BufferError */
    target = PyBytes_FromString("abcd");
    proxy = proxy_open(&ic_buffer_ops, target, &rec);
    bool refused =
        get_and_release(proxy, PyBUF_WRITABLE) < 0 && PyErr_ExceptionMatches(PyExc_BufferError);
    PyErr_Clear();
    TAP_OK(refused && rec.producer_raised && rec.diag.count == 0,
           "bytes refuses PyBUF_WRITABLE with BufferError: conformant, recorded");
    TAP_OK(get_and_release(proxy, PyBUF_CONTIG_RO) == 0 && rec.view.readonly,
           "and then gives a read-only buffer");
    proxy_close(proxy);
    Py_DECREF(target);

    /* array.array has a format */
    PyObject *array = PyImport_ImportModule("array");
    target = array ? PyObject_CallMethod(array, "array", "s[ddd]", "d", 1.0, 2.0, 3.0) : NULL;
    proxy = proxy_open(&ic_buffer_ops, target, &rec);
    TAP_OK(get_and_release(proxy, PyBUF_RECORDS_RO) == 0 && rec.view.dtype == IC_DTYPE_FLOAT64 &&
               rec.view.shape[0] == 3 && rec.diag.count == 0,
           "array.array('d') is float64 (3,)");
    proxy_close(proxy);
    Py_XDECREF(target);
    Py_XDECREF(array);
}

/* What a consumer met that asked a fresh proxy of an exporter in `mode` for a buffer with
 * `flags` and released it at once; the proxy's record is left in *rec, finished as the driver
 * finishes a case. */
struct proxied_get {
    int rc;      /* the get's result */
    bool raised; /* the get failed with `expected`, the exception the consumer got */
    int exports; /* the exporter's gets not yet released, right after the release */
};

static struct proxied_get get_through_proxy(enum exporter_mode mode, int flags, PyObject *expected,
                                            struct ic_export_record *rec)
{
    struct proxied_get out;
    struct exporter *e = exporter_new(mode);
    PyObject *proxy = proxy_open(&ic_buffer_ops, (PyObject *)e, rec);
    out.rc = get_and_release(proxy, flags);
    out.raised = out.rc < 0 && expected && PyErr_ExceptionMatches(expected);
    PyErr_Clear();
    out.exports = e->exports;
    ic_buffer_ops.finish(proxy, rec);
    proxy_close(proxy);
    Py_DECREF(e);
    return out;
}

/* The exporter of this test that breaks the rules, through the proxy */
static void test_proxy_broken(void)
{
    struct ic_export_record rec;
    static const struct {
        enum exporter_mode mode;
        int flags;
        enum ic_rule rule;
        const char *what;
    } broken[] = {
        {MODE_BAD_LEN, PyBUF_RECORDS_RO, IC_RULE_BUFFER_SIZE, "len that does not match shape"},
        {MODE_BAD_FORMAT, PyBUF_RECORDS_RO, IC_RULE_BUFFER_FORMAT, "format d with itemsize 4"},
        {MODE_ALWAYS_READONLY, PyBUF_RECORDS, IC_RULE_BUFFER_WRITABLE,
         "read-only for PyBUF_RECORDS"},
        {MODE_ALWAYS_STRIDES, PyBUF_CONTIG_RO, IC_RULE_BUFFER_SHAPE_STRIDES,
         "strides for PyBUF_CONTIG_RO"},
        {MODE_FORTRAN, PyBUF_C_CONTIGUOUS, IC_RULE_BUFFER_CONTIGUOUS,
         "Fortran data for PyBUF_C_CONTIGUOUS"},
    };
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        struct proxied_get got = get_through_proxy(broken[i].mode, broken[i].flags, NULL, &rec);
        TAP_OK(got.rc == 0 && has_error(&rec.diag, broken[i].rule) && got.exports == 0,
               "proxy: %s is %s", broken[i].what, ic_rule_id(broken[i].rule));
        TAP_OK(rec.lifetime.count == 0, "proxy: and the inner buffer was released once");
    }

    struct proxied_get got =
        get_through_proxy(MODE_FAIL_KEEP_OBJ, PyBUF_RECORDS_RO, PyExc_BufferError, &rec);
    TAP_OK(got.raised && has_error(&rec.diag, IC_RULE_BUFFER_FAILED_GET) && rec.producer_raised,
           "a failure that leaves obj set is an error; the BufferError reaches the consumer");
    got = get_through_proxy(MODE_FAIL_SILENT, PyBUF_RECORDS_RO, PyExc_SystemError, &rec);
    TAP_OK(got.raised && has_error(&rec.diag, IC_RULE_BUFFER_FAILED_GET),
           "a failure without an exception is an error; the consumer gets a SystemError");

    /* An exporter that points at memory that is not there: the proxy withholds its buffer, so
     * that no consumer reads it, and releases the exporter's at once. */
    enum exporter_mode unmapped[] = {MODE_UNMAPPED_BUF, MODE_UNMAPPED_SHAPE};
    for (int i = 0; i < 2; i++) {
        got = get_through_proxy(unmapped[i], PyBUF_RECORDS_RO, PyExc_BufferError, &rec);
        TAP_OK(got.raised && has_error(&rec.diag, IC_RULE_BUFFER_FIELDS) && !rec.producer_raised &&
                   got.exports == 0,
               "proxy: %s is withheld (BufferError to the consumer), the get released",
               i == 0 ? "a buffer in unmapped memory" : "a shape in unmapped memory");
        TAP_OK(rec.lifetime.count == 0, "proxy: and its gets and releases balance");
    }

    got = get_through_proxy(MODE_FAIL_VALUE_ERROR, PyBUF_RECORDS_RO, PyExc_ValueError, &rec);
    TAP_OK(got.raised && has_warning(&rec.diag, IC_RULE_BUFFER_FAILED_GET) &&
               rec.diag.errors == 0 && strcmp(rec.producer_exc_type, "ValueError") == 0,
           "a ValueError refusal (NumPy's) is a warning");
}

static void test_reference_consumer(void)
{
    struct ic_export_record rec;
    PyObject *handle = NULL;
    struct exporter *e = exporter_new(MODE_GOOD);

    TAP_OK(reference_import(&ic_buffer_ops, (PyObject *)e, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               handle && e->exports == 1,
           "plain: the reference consumer holds one buffer");
    TAP_OK(strcmp(rec.request, "PyBUF_RECORDS_RO") == 0 && rec.diag.count == 0 &&
               rec.view.dtype == IC_DTYPE_FLOAT32 && rec.view.data == (uintptr_t)e->data,
           "plain: PyBUF_RECORDS_RO, float32 at the exporter's data");
    Py_CLEAR(handle);
    TAP_OK(e->exports == 0 && rec.released == 1, "releasing the handle releases the buffer");
    ic_buffer_ops.finish((PyObject *)e, &rec);
    TAP_OK(rec.lifetime.count == 0, "plain: no lifetime finding");

    reference_import(&ic_buffer_ops, (PyObject *)e, IC_VARIANT_BUF_CONTIG, &rec, &handle);
    TAP_OK(handle && strcmp(rec.request, "PyBUF_C_CONTIGUOUS | PyBUF_FORMAT") == 0 &&
               rec.diag.count == 0,
           "contig: a C-contiguous exporter answers (%s)", rec.request);
    Py_CLEAR(handle);
    reference_import(&ic_buffer_ops, (PyObject *)e, IC_VARIANT_BUF_WRITABLE, &rec, &handle);
    TAP_OK(handle && strcmp(rec.request, "PyBUF_RECORDS") == 0 && !rec.view.readonly &&
               rec.diag.count == 0,
           "writable: a writable exporter answers PyBUF_RECORDS");
    Py_CLEAR(handle);
    Py_DECREF(e);

    static const struct {
        enum exporter_mode mode;
        enum ic_variant variant;
        enum ic_rule rule;
        const char *what;
    } wrong[] = {
        {MODE_FORTRAN, IC_VARIANT_BUF_CONTIG, IC_RULE_BUFFER_CONTIGUOUS,
         "contig: Fortran data for a C_CONTIGUOUS request is an error"},
        {MODE_ALWAYS_READONLY, IC_VARIANT_BUF_WRITABLE, IC_RULE_BUFFER_WRITABLE,
         "writable: a read-only answer to PyBUF_RECORDS is an error"},
    };
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        e = exporter_new(wrong[i].mode);
        reference_import(&ic_buffer_ops, (PyObject *)e, wrong[i].variant, &rec, &handle);
        TAP_OK(handle && has_error(&rec.diag, wrong[i].rule), "%s", wrong[i].what);
        Py_CLEAR(handle);
        Py_DECREF(e);
    }

    PyObject *frozen = PyBytes_FromString("abcd");
    TAP_OK(reference_import(&ic_buffer_ops, frozen, IC_VARIANT_BUF_WRITABLE, &rec, &handle) == 0 &&
               !handle && rec.producer_raised &&
               strcmp(rec.producer_exc_type, "BufferError") == 0 && !PyErr_Occurred(),
           "writable: bytes refuses with BufferError, recorded, nothing pending");
    ic_buffer_ops.finish(frozen, &rec);
    TAP_OK(rec.lifetime.count == 0, "a refusal leaves nothing to release");
    Py_DECREF(frozen);

    TAP_OK(ops_registered(IC_PROTOCOL_BUFFER, &ic_buffer_ops),
           "the ops are registered under their id");
}

int main(void)
{
    test_format();
    if (test_python_start() < 0)
        return 1;
    test_rules();
    test_guarded_fields();
    test_proxy();
    test_proxy_broken();
    test_reference_consumer();
    Py_CLEAR(exporter_type);
    test_python_stop();
    return tap_done();
}
