/* Unit tests of ic_cai: the __cuda_array_interface__ validator on hand-built dicts, valid and
 * broken one rule at a time (the pointers are made-up device addresses: nothing here reads
 * them), the spellings consumers must accept, the stream values, masks; then the proxy and
 * the reference consumer with Python-defined producers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "ic_cai.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "tap.h"
#include "test_diag.h"
#include "test_protocol.h"
#include "test_python.h"

#define DEVICE_PTR    0x7f0000001000ULL /* a plausible device address, never dereferenced */
#define MASK_PTR      0x7f0000002000ULL
#define STREAM_HANDLE 0x5555deadbe00ULL

struct checked {
    struct ic_diag diag;
    struct ic_view view;
    struct ic_cai_info info;
    bool have_view;
    bool pending; /* an exception was left pending: never acceptable */
};

static struct checked check(PyObject *value)
{
    struct checked out;
    memset(&out, 0, sizeof(out));
    ic_diag_init(&out.diag);
    ic_cai_check(value, &out.diag, &out.view, &out.have_view, &out.info);
    out.pending = PyErr_Occurred() != NULL;
    PyErr_Clear();
    Py_XDECREF(value); /* every test dict is built for one check */
    return out;
}

/* Exactly the findings of one rule (of one severity), none of another rule. */
static bool only(const struct checked *c, enum ic_severity severity, enum ic_rule rule)
{
    if (c->pending || c->diag.count == 0)
        return false;
    for (int i = 0; i < c->diag.count; i++) {
        if (c->diag.items[i].severity != severity || c->diag.items[i].rule != rule)
            return false;
    }
    return test_has(&c->diag, severity, rule);
}

static bool only_error(const struct checked *c, enum ic_rule rule)
{
    return has_error(&c->diag, rule) && !c->pending;
}

static bool clean(const struct checked *c)
{
    return c->diag.count == 0 && c->have_view && !c->pending;
}

/* The valid base dict: a 2x3 float32 array on the device, what CuPy exports without a stream. */
static PyObject *base_dict(void)
{
    return Py_BuildValue("{s:(ii),s:s,s:(KO),s:i}", "shape", 2, 3, "typestr", "<f4", "data",
                         DEVICE_PTR, Py_False, "version", 3);
}

static PyObject *big_int(const char *decimal)
{
    return PyLong_FromString(decimal, NULL, 10);
}

/* ---------------------------------------------------------------------------------------
 * Valid exports, and the spellings consumers must accept
 */

static void test_valid(void)
{
    struct checked c = check(base_dict());
    TAP_OK(clean(&c), "the base dict is valid");
    TAP_OK(c.view.data == DEVICE_PTR && c.view.device_type == IC_DEVICE_CUDA &&
               c.view.device_id == -1 && c.view.ndim == 2 && c.view.shape[0] == 2 &&
               c.view.shape[1] == 3 && c.view.strides[0] == 12 && c.view.strides[1] == 4 &&
               c.view.itemsize == 4 && c.view.dtype == IC_DTYPE_FLOAT32 && !c.view.readonly &&
               c.view.readonly_known,
           "its view: the pointer, CUDA with the device left to the driver, C strides (12, 4), "
           "float32, writable");
    TAP_OK(c.info.have_version && c.info.version == 3 && c.info.stream_applies &&
               !c.info.has_stream && c.info.stream == 0 && !c.info.has_mask,
           "version 3, no stream named");

    c = check(with(base_dict(), "strides", Py_NewRef(Py_None)));
    TAP_OK(clean(&c) && c.view.strides[0] == 12 && c.view.strides[1] == 4,
           "strides None means C strides");
    c = check(with(base_dict(), "strides", Py_BuildValue("(ii)", 12, 4)));
    TAP_OK(clean(&c) && c.view.strides[0] == 12 && c.view.strides[1] == 4,
           "explicit C strides are accepted as well (numba#4175)");
    c = check(with(base_dict(), "strides", Py_BuildValue("(ii)", 4, 8)));
    TAP_OK(clean(&c) && c.view.strides[0] == 4 && c.view.strides[1] == 8,
           "Fortran strides (4, 8) are used, in bytes");
    c = check(with(base_dict(), "strides", Py_BuildValue("(ii)", -12, 4)));
    TAP_OK(clean(&c) && c.view.strides[0] == -12, "a negative byte stride is legal");

    PyObject *empty = with(base_dict(), "shape", Py_BuildValue("(ii)", 0, 3));
    c = check(with(empty, "data", Py_BuildValue("(KO)", 0ULL, Py_False)));
    TAP_OK(clean(&c) && c.view.data == 0, "an empty array with pointer 0");

    c = check(with(base_dict(), "version", PyLong_FromLong(2)));
    TAP_OK(clean(&c) && !c.info.stream_applies && c.info.version == 2,
           "version 2 without a stream (PyTorch's export) is valid");
    c = check(with(base_dict(), "data", Py_BuildValue("(KO)", DEVICE_PTR, Py_True)));
    TAP_OK(clean(&c) && c.view.readonly, "data[1] True makes it read-only");
    c = check(with(base_dict(), "descr", Py_BuildValue("[(ss)]", "", "<f4")));
    TAP_OK(clean(&c), "the default descr (CuPy always sends it) matches");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("|b1")));
    TAP_OK(clean(&c) && c.view.dtype == IC_DTYPE_BOOL && c.view.strides[0] == 3, "|b1 is bool");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString(">u1")));
    TAP_OK(clean(&c) && c.view.dtype == IC_DTYPE_UINT8,
           "'>' on a one-byte type is harmless: byte order does not matter");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("<c8")));
    TAP_OK(clean(&c) && c.view.dtype == IC_DTYPE_COMPLEX64, "<c8 is complex64");
    PyObject *scalar = with(base_dict(), "shape", PyTuple_New(0));
    c = check(scalar);
    TAP_OK(clean(&c) && c.view.ndim == 0, "a 0-d array (shape ()) has one element");
    c = check(with(base_dict(), "mask", Py_NewRef(Py_None)));
    TAP_OK(clean(&c) && !c.info.has_mask, "mask None is no mask");
}

/* ---------------------------------------------------------------------------------------
 * One rule at a time
 */

static void test_dict_and_version(void)
{
    /* 3.1.1 */
    struct checked c = check(PyList_New(0));
    TAP_OK(only_error(&c, IC_RULE_CAI_DICT) && !c.have_view, "a list is no dict");
    static const char *const required[] = {"shape", "typestr", "data", "version"};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        c = check(with(base_dict(), required[i], NULL));
        TAP_OK(only_error(&c, IC_RULE_CAI_DICT), "a missing '%s' is an error", required[i]);
    }
    c = check(with(base_dict(), "version", NULL));
    TAP_OK(c.have_view && c.info.stream_applies,
           "without a version the view is still described, and a stream would be checked");

    /* 3.1.2 */
    c = check(with(base_dict(), "version", PyUnicode_FromString("3")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_VERSION), "a str version is an error");
    c = check(with(base_dict(), "version", Py_NewRef(Py_True)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_VERSION), "a bool version is an error");
    c = check(with(base_dict(), "version", PyLong_FromLong(-1)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_VERSION), "version -1 is an error");
    c = check(with(base_dict(), "version", big_int("100000000000000000000")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_VERSION), "version 10**20 is an error");
    c = check(with(base_dict(), "version", PyLong_FromLong(4)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_VERSION) && c.have_view && c.info.stream_applies,
           "version 4 is only a warning (unknown, not rejected)");
    show_diag("version 4", &c.diag);
    PyObject *old = with(base_dict(), "version", PyLong_FromLong(2));
    c = check(with(old, "stream", PyLong_FromLong(5)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_VERSION) && !c.info.has_stream,
           "a stream in a version 2 export is ignored, with a warning");
    old = with(base_dict(), "version", PyLong_FromLong(2));
    c = check(with(old, "stream", PyLong_FromLong(0)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_VERSION),
           "even stream 0 is not judged by rule 3.1.9 in a version 2 export");
}

static void test_shape(void)
{
    struct checked c = check(with(base_dict(), "shape", Py_BuildValue("[ii]", 2, 3)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE) && !c.have_view, "a list shape is an error");
    c = check(with(base_dict(), "shape", Py_BuildValue("(ii)", 2, -3)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE) && !c.have_view,
           "a negative extent is an error");
    show_diag("negative extent", &c.diag);
    c = check(with(base_dict(), "shape", Py_BuildValue("(N)", big_int("1180591620717411303424"))));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE), "an extent of 2**70 does not fit in int64");
    c = check(with(base_dict(), "shape", Py_BuildValue("(LL)", (long long)(INT64_MAX / 2), 4LL)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE), "an overflowing element count is an error");
    c = check(with(base_dict(), "shape", Py_BuildValue("(L)", (long long)(INT64_MAX / 2))));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE),
           "an element count whose size in bytes overflows is an error");
    c = check(with(base_dict(), "shape", Py_BuildValue("(is)", 2, "3")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE), "a str extent is an error");
    c = check(with(base_dict(), "shape", Py_BuildValue("(iO)", 2, Py_True)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE), "a bool extent is an error");
    PyObject *deep = PyTuple_New(IC_MAX_NDIM + 1);
    for (Py_ssize_t i = 0; i < IC_MAX_NDIM + 1; i++)
        PyTuple_SET_ITEM(deep, i, PyLong_FromLong(1));
    c = check(with(base_dict(), "shape", deep));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_SHAPE), "%d dimensions are too many",
           IC_MAX_NDIM + 1);
}

static void test_typestr(void)
{
    struct checked c = check(with(base_dict(), "typestr", PyUnicode_FromString(">f4")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_TYPESTR) && !c.have_view,
           "a big-endian float32 is an error on the GPU");
    show_diag(">f4", &c.diag);
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("bfloat16")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_TYPESTR) && !c.have_view,
           "a non-standard \"bfloat16\" is an error");
    show_diag("bfloat16", &c.diag);
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("<f3")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_TYPESTR), "<f3 has no such size");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("|V0")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_TYPESTR), "|V0: the size must be > 0");
    c = check(with(base_dict(), "typestr", PyLong_FromLong(4)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_TYPESTR), "an int typestr is an error");
    c = check(with(base_dict(), "typestr", PyBytes_FromString("<f4")));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_TYPESTR) && c.have_view,
           "a bytes typestr is a warning");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("=f4")));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_TYPESTR) && c.have_view,
           "byte order '=' is not one of the protocol's: a warning");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("|f4")));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_TYPESTR) && c.have_view,
           "'|' on a 4-byte float is a warning");
    c = check(with(base_dict(), "typestr", PyUnicode_FromString("|O")));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_TYPESTR),
           "Python object pointers in device memory are a warning");
}

static void test_data(void)
{
    struct checked c =
        check(with(base_dict(), "data", Py_BuildValue("[KO]", DEVICE_PTR, Py_False)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA) && !c.have_view, "a list data is an error");
    c = check(with(base_dict(), "data", Py_BuildValue("(KOi)", DEVICE_PTR, Py_False, 0)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA), "a 3-tuple data is an error");
    c = check(with(base_dict(), "data", Py_BuildValue("(iO)", -4096, Py_False)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA) && !c.have_view,
           "a negative pointer is an error");
    c = check(with(base_dict(), "data",
                   Py_BuildValue("(NO)", big_int("18446744073709551616"), Py_False)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA), "a pointer of 2**64 is past UINTPTR_MAX");
    show_diag("2**64", &c.diag);
    c = check(with(base_dict(), "data", Py_BuildValue("(OO)", Py_None, Py_False)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA), "pointer None (old Numba) is an error");
    c = check(with(base_dict(), "data", Py_BuildValue("(Ki)", DEVICE_PTR, 1)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_DATA) && c.have_view && c.view.readonly,
           "an int read-only flag is a warning and read as its truth value");
    c = check(with(base_dict(), "data", Py_BuildValue("(KO)", DEVICE_PTR, Py_None)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA), "a None read-only flag is an error");
    c = check(with(base_dict(), "data", Py_BuildValue("(KO)", 0ULL, Py_False)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA) && !c.have_view,
           "pointer 0 for 6 elements is an error");
    show_diag("pointer 0", &c.diag);
    PyObject *empty = with(base_dict(), "shape", Py_BuildValue("(ii)", 2, 0));
    c = check(empty);
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DATA),
           "a zero-size array with a non-zero pointer is an error (cupy#2610)");
    show_diag("empty, pointer set", &c.diag);
    empty = with(base_dict(), "shape", Py_BuildValue("(ii)", 2, 0));
    c = check(with(empty, "version", PyLong_FromLong(1)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_DATA),
           "in a version 1 export, which predates the rule, it is a warning");
}

static void test_strides(void)
{
    struct checked c = check(with(base_dict(), "strides", Py_BuildValue("(i)", 4)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STRIDES) && !c.have_view,
           "one stride for two dimensions is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("[ii]", 12, 4)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STRIDES), "a list of strides is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(is)", 12, "4")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STRIDES), "a str stride is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(Li)", (long long)INT64_MAX, 4)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STRIDES) && !c.have_view,
           "a span that overflows int64 is an error");
    c = check(with(base_dict(), "strides", Py_BuildValue("(ii)", 12, 2)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_STRIDES) && c.have_view && c.view.strides[1] == 2,
           "a stride that is no multiple of the itemsize is a warning");
    show_diag("stride 2 for 4-byte items", &c.diag);
    PyObject *row = with(base_dict(), "shape", Py_BuildValue("(ii)", 1, 3));
    c = check(with(row, "strides", Py_BuildValue("(ii)", 1, 4)));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_STRIDES),
           "also for a dimension of extent 1 (PyTorch checks every stride)");
}

static void test_descr(void)
{
    struct checked c = check(with(base_dict(), "descr", Py_BuildValue("[(ss)]", "", "<f8")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DESCR) && c.have_view,
           "an 8-byte descr for a 4-byte typestr is an error");
    show_diag("descr <f8", &c.diag);
    c = check(with(base_dict(), "descr", PyUnicode_FromString("<f4")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DESCR), "a str descr is an error");
    c = check(with(base_dict(), "descr", Py_BuildValue("[(s)]", "x")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_DESCR), "a field without a type is an error");
    PyObject *record = with(base_dict(), "typestr", PyUnicode_FromString("|V8"));
    c = check(with(record, "descr", Py_BuildValue("[(ss),(ss)]", "x", "<f4", "y", "<i4")));
    TAP_OK(clean(&c) && c.view.itemsize == 8 && c.view.dtype == IC_DTYPE_INVALID,
           "a two-field record descr totals 8 bytes");
}

/* ---------------------------------------------------------------------------------------
 * Python producers: masks, the proxy and the reference consumer
 */

static const char producers_code[] =
    "class Cai:\n"
    "    def __init__(self, d):\n"
    "        self.d = d\n"
    "    @property\n"
    "    def __cuda_array_interface__(self):\n"
    "        return self.d\n"
    "\n"
    "class Cpu:\n"
    "    '''PyTorch's CPU tensors: the attribute raises AttributeError, so hasattr works.'''\n"
    "    @property\n"
    "    def __cuda_array_interface__(self):\n"
    "        raise AttributeError('not on a CUDA device')\n"
    "\n"
    "class Failing:\n"
    "    @property\n"
    "    def __cuda_array_interface__(self):\n"
    "        raise RuntimeError('no interface today')\n"
    "\n"
    "class Moving:\n"
    "    '''Names a new stream on every read.'''\n"
    "    def __init__(self, d):\n"
    "        self.d = d\n"
    "        self.reads = 0\n"
    "    @property\n"
    "    def __cuda_array_interface__(self):\n"
    "        self.reads += 1\n"
    "        return dict(self.d, stream=1000 + self.reads)\n";

static PyObject *mask_dict(PyObject *shape)
{
    return Py_BuildValue("{s:N,s:s,s:(KO),s:i}", "shape", shape, "typestr", "|b1", "data", MASK_PTR,
                         Py_False, "version", 3);
}

static void test_mask(void)
{
    struct checked c =
        check(with(base_dict(), "mask", producer_new("Cai", mask_dict(Py_BuildValue("(i)", 3)))));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_MASK) && c.have_view && c.info.has_mask,
           "a (3,) mask broadcasts to (2, 3): only the consumers-reject-masks warning");
    show_diag("(3,) mask", &c.diag);
    c = check(
        with(base_dict(), "mask", producer_new("Cai", mask_dict(Py_BuildValue("(ii)", 2, 1)))));
    TAP_OK(only(&c, IC_SEV_WARNING, IC_RULE_CAI_MASK), "a (2, 1) mask broadcasts to (2, 3)");
    c = check(with(base_dict(), "mask", producer_new("Cai", mask_dict(Py_BuildValue("(i)", 4)))));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_MASK) && !c.pending, "a (4,) mask does not broadcast");
    show_diag("(4,) mask", &c.diag);
    c = check(
        with(base_dict(), "mask", producer_new("Cai", mask_dict(Py_BuildValue("(iii)", 1, 2, 3)))));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_MASK), "a mask with more dimensions does not broadcast");
    c = check(with(base_dict(), "mask", PyLong_FromLong(1)));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_MASK) && !c.pending,
           "an int mask (no interface) is an error, and its AttributeError is not left pending");
    PyObject *broken = mask_dict(Py_BuildValue("(i)", 3));
    broken = with(broken, "typestr", PyUnicode_FromString(">f4"));
    c = check(with(base_dict(), "mask", producer_new("Cai", broken)));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_MASK) && !has_error(&c.diag, IC_RULE_CAI_TYPESTR),
           "a mask with an invalid interface is a mask error, citing the mask's rule inside");
    show_diag("invalid mask", &c.diag);
    c = check(with(base_dict(), "mask", producer_new("Failing", NULL)));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_MASK) && !c.pending,
           "a mask whose attribute raises is an error, nothing left pending");
}

static void test_stream(void)
{
    struct checked c = check(with(base_dict(), "stream", Py_NewRef(Py_None)));
    TAP_OK(clean(&c) && !c.info.has_stream, "stream None: no synchronisation needed");
    c = check(with(base_dict(), "stream", PyLong_FromLong(1)));
    TAP_OK(clean(&c) && c.info.has_stream && c.info.stream == IC_CAI_STREAM_LEGACY,
           "stream 1: the legacy default stream");
    c = check(with(base_dict(), "stream", PyLong_FromLong(2)));
    TAP_OK(clean(&c) && c.info.has_stream && c.info.stream == IC_CAI_STREAM_PER_THREAD,
           "stream 2: the per-thread default stream");
    c = check(with(base_dict(), "stream", PyLong_FromUnsignedLongLong(STREAM_HANDLE)));
    TAP_OK(clean(&c) && c.info.has_stream && c.info.stream == (int64_t)STREAM_HANDLE,
           "a cudaStream_t handle");
    c = check(with(base_dict(), "stream", PyLong_FromLong(0)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STREAM) && !c.info.has_stream && c.have_view,
           "stream 0 is an error (ambiguous)");
    show_diag("stream 0", &c.diag);
    c = check(with(base_dict(), "stream", PyLong_FromLong(-1)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STREAM) && !c.info.has_stream,
           "stream -1 is an error (negative)");
    c = check(with(base_dict(), "stream", PyUnicode_FromString("1")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STREAM), "a str stream is an error");
    c = check(with(base_dict(), "stream", Py_NewRef(Py_True)));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STREAM), "a bool stream is an error");
    c = check(with(base_dict(), "stream", big_int("18446744073709551615")));
    TAP_OK(only(&c, IC_SEV_ERROR, IC_RULE_CAI_STREAM), "a stream past int64 is an error");
    PyObject *newer = with(base_dict(), "version", PyLong_FromLong(4));
    c = check(with(newer, "stream", PyLong_FromLong(0)));
    TAP_OK(has_error(&c.diag, IC_RULE_CAI_STREAM), "a newer version keeps the stream rules");
}

static void test_ops(void)
{
    struct ic_export_record rec;
    PyObject *dict = with(base_dict(), "stream", PyLong_FromLong(7));
    PyObject *target = producer_new("Cai", Py_NewRef(dict));

    PyObject *proxy = proxy_open(&ic_cai_ops, target, &rec);
    PyObject *got = PyObject_GetAttrString(proxy, "__cuda_array_interface__");
    TAP_OK(got == dict, "the proxy returns the producer's dict unchanged");
    TAP_OK(rec.export_calls == 1 && rec.have_view && rec.view.data == DEVICE_PTR &&
               rec.view.device_type == IC_DEVICE_CUDA && rec.diag.count == 0 &&
               rec.zero_copy_known && strcmp(rec.request, "__cuda_array_interface__") == 0,
           "and records the export (%s)", rec.detail);
    TAP_OK(rec.has_stream && rec.stream == 7, "with the stream it names");
    Py_XDECREF(got);
    got = PyObject_GetAttrString(proxy, "__cuda_array_interface__");
    TAP_OK(got == dict && rec.export_calls == 2, "each read is counted");
    Py_XDECREF(got);
    TAP_OK(!PyObject_HasAttrString(proxy, "__array_interface__") &&
               !PyObject_HasAttrString(proxy, "__dlpack__") && !PyObject_CheckBuffer(proxy),
           "the proxy offers nothing else");
    ic_proxy_detach(proxy);
    got = PyObject_GetAttrString(proxy, "__cuda_array_interface__");
    TAP_OK(got == dict && rec.export_calls == 2, "a detached proxy forwards without recording");
    Py_XDECREF(got);
    Py_DECREF(proxy);

    PyObject *handle = NULL;
    TAP_OK(reference_import(&ic_cai_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 &&
               handle == dict,
           "the reference consumer's handle is the dict");
    TAP_OK(rec.have_view && rec.diag.errors == 0 && rec.has_stream && rec.stream == 7 &&
               rec.export_calls == 1,
           "and its view and stream are recorded");
    Py_XDECREF(handle);
    Py_DECREF(target);

    target = producer_new("Moving", base_dict());
    proxy = proxy_open(&ic_cai_ops, target, &rec);
    for (int i = 0; i < 2; i++) {
        got = PyObject_GetAttrString(proxy, "__cuda_array_interface__");
        Py_XDECREF(got);
    }
    TAP_OK(rec.export_calls == 2 && rec.has_stream && rec.stream == 1001,
           "the record keeps the stream of the read whose view it keeps (the first)");
    proxy_close(proxy);
    Py_DECREF(target);

    PyObject *broken = with(PyDict_Copy(dict), "stream", PyLong_FromLong(0));
    target = producer_new("Cai", broken);
    TAP_OK(passes_through_proxy(&ic_cai_ops, target, "__cuda_array_interface__", &rec) &&
               ic_export_diag_has_error(&rec.diag, IC_RULE_CAI_STREAM) && !rec.has_stream &&
               rec.stream == 0,
           "a broken dict passes through the proxy and is recorded as an error, no stream");
    Py_DECREF(target);

    target = producer_new("Failing", NULL);
    TAP_OK(raises_through_proxy(&ic_cai_ops, target, "__cuda_array_interface__", PyExc_RuntimeError,
                                &rec) &&
               rec.producer_raised && strcmp(rec.producer_exc_type, "RuntimeError") == 0 &&
               !rec.have_view,
           "the producer's exception reaches the consumer through the proxy and is recorded");
    Py_DECREF(target);

    target = producer_new("Cpu", NULL);
    TAP_OK(reference_import(&ic_cai_ops, target, IC_VARIANT_NONE, &rec, &handle) == 0 && !handle &&
               rec.producer_raised && strcmp(rec.producer_exc_type, "AttributeError") == 0 &&
               strstr(rec.producer_exc_message, "not on a CUDA device") != NULL &&
               !PyErr_Occurred(),
           "the reference consumer records a producer's AttributeError, nothing left pending");
    Py_DECREF(target);
    Py_DECREF(dict);

    enum ic_protocol found = IC_PROTOCOL_DLPACK;
    TAP_OK(ops_registered(IC_PROTOCOL_CAI, &ic_cai_ops) &&
               ic_protocol_from_id("cuda_array_interface", &found) == 0 &&
               found == IC_PROTOCOL_CAI && !ic_cai_ops.inspect && !ic_cai_ops.observe &&
               !ic_cai_ops.finish,
           "the ops are registered under their id, without lifetime ops");

    struct ic_diag diag;
    struct ic_view view;
    bool have_view = false;
    ic_diag_init(&diag);
    TAP_OK(ic_cai_check(NULL, &diag, &view, &have_view, NULL) == IC_EINVAL,
           "a NULL value is IC_EINVAL");
}

int main(void)
{
    return test_python_main(producers_code,
                            TAP_TESTS(test_valid, test_dict_and_version, test_shape, test_typestr,
                                      test_data, test_strides, test_descr, test_mask, test_stream,
                                      test_ops));
}
