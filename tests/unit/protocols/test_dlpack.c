/* Unit tests of ic_dlpack: the tensor and capsule validators on hand-built DLPack structs and
 * capsules, the deleter watch, the proxy end to end with a C consumer, and every variant of
 * the reference consumer against Python-defined producers that behave and misbehave. The
 * producers make their capsules through a C function of this test (make_capsule), whose
 * deleter counts its calls and poisons the struct it frees. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ic_dlpack.h"
#include "ic_error.h"
#include "ic_export.h"
#include "ic_protocol.h"
#include "tap.h"
#include "test_diag.h"
#include "test_memory.h"
#include "test_protocol.h"
#include "test_python.h"

/* ---------------------------------------------------------------------------------------
 * A test producer in C
 */

static int deleter_calls; /* calls of the producer's own deleter (after any instrumentation) */

/* One allocation: the managed struct first (so the struct pointer frees the block), then
 * the arrays it points to. */
struct test_tensor {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } managed;
    int64_t shape[4];
    int64_t strides[4];
    float data[16];
    /* A broken producer's capsule destructor reads the struct after the deleter ran: its
     * blocks are poisoned but kept, with the deleter field intact, so that the test sees the
     * second call instead of undefined behaviour. */
    bool keep;
};

/* The kept blocks, for the life of the test: referenced, so that LeakSanitizer does not
 * take them for leaks (scripts/test --sanitize). */
static struct test_tensor *kept_blocks[16];
static int kept_count;

static void test_tensor_free(void *block)
{
    struct test_tensor *t = block;
    deleter_calls++;
    if (t->keep) {
        memset(t->data, 0xA5, sizeof(t->data));
        if (kept_count < (int)(sizeof(kept_blocks) / sizeof(kept_blocks[0])))
            kept_blocks[kept_count++] = t;
        return;
    }
    memset(t, 0xA5, sizeof(*t)); /* reads after the deleter see garbage */
    free(t);
}

static void test_deleter_legacy(DLManagedTensor *managed)
{
    test_tensor_free(managed);
}

static void test_deleter_versioned(DLManagedTensorVersioned *managed)
{
    test_tensor_free(managed);
}

struct tensor_spec {
    bool versioned;
    uint32_t major, minor;
    uint64_t flags;
    int32_t ndim;
    int64_t shape[4];
    bool no_strides;
    DLDataType dtype;
    DLDevice device;
    uint64_t byte_offset;
};

static struct tensor_spec spec_default(void)
{
    struct tensor_spec spec = {
        .versioned = true,
        .major = 1,
        .minor = 3,
        .ndim = 2,
        .shape = {2, 3},
        .dtype = {kDLFloat, 32, 1},
        .device = {kDLCPU, 0},
    };
    return spec;
}

static struct test_tensor *test_tensor_new(const struct tensor_spec *spec)
{
    struct test_tensor *t = calloc(1, sizeof(*t));
    if (!t)
        abort();
    for (int i = 0; i < 16; i++)
        t->data[i] = (float)i;
    int64_t stride = 1;
    for (int i = spec->ndim - 1; i >= 0 && i < 4; i--) {
        t->shape[i] = spec->shape[i];
        t->strides[i] = stride;
        stride *= spec->shape[i] > 1 ? spec->shape[i] : 1;
    }
    DLTensor *dl = spec->versioned ? &t->managed.versioned.dl_tensor : &t->managed.legacy.dl_tensor;
    dl->data = t->data;
    dl->device = spec->device;
    dl->ndim = spec->ndim;
    dl->dtype = spec->dtype;
    dl->shape = t->shape;
    dl->strides = spec->no_strides ? NULL : t->strides;
    dl->byte_offset = spec->byte_offset;
    if (spec->versioned) {
        t->managed.versioned.version.major = spec->major;
        t->managed.versioned.version.minor = spec->minor;
        t->managed.versioned.flags = spec->flags;
        t->managed.versioned.deleter = test_deleter_versioned;
    } else {
        t->managed.legacy.deleter = test_deleter_legacy;
    }
    return t;
}

static char versioned_marker; /* capsule context: the capsule holds a versioned struct */

/* The producer's capsule destructor as protocols.md §2.3 describes it. */
static void test_capsule_destructor(PyObject *capsule)
{
    const char *name = PyCapsule_GetName(capsule);
    if (!name || strncmp(name, "used_", 5) == 0)
        return;
    void *pointer = PyCapsule_GetPointer(capsule, name);
    if (!pointer) {
        PyErr_Clear();
        return;
    }
    if (PyCapsule_GetContext(capsule) == &versioned_marker) {
        DLManagedTensorVersioned *managed = pointer;
        if (managed->deleter)
            managed->deleter(managed);
    } else {
        DLManagedTensor *managed = pointer;
        if (managed->deleter)
            managed->deleter(managed);
    }
}

/* A broken producer: its destructor calls the deleter even after the capsule was consumed. */
static void buggy_capsule_destructor(PyObject *capsule)
{
    const char *name = PyCapsule_GetName(capsule);
    void *pointer = name ? PyCapsule_GetPointer(capsule, name) : NULL;
    if (!pointer) {
        PyErr_Clear();
        return;
    }
    if (PyCapsule_GetContext(capsule) == &versioned_marker) {
        DLManagedTensorVersioned *managed = pointer;
        managed->deleter(managed);
    } else {
        DLManagedTensor *managed = pointer;
        managed->deleter(managed);
    }
}

static PyObject *capsule_new(const struct tensor_spec *spec, const char *name,
                             PyCapsule_Destructor destructor)
{
    struct test_tensor *t = test_tensor_new(spec);
    t->keep = destructor == buggy_capsule_destructor;
    if (!name)
        name = spec->versioned ? "dltensor_versioned" : "dltensor";
    PyObject *capsule = PyCapsule_New(t, name, destructor);
    if (!capsule)
        abort();
    if (spec->versioned)
        PyCapsule_SetContext(capsule, &versioned_marker);
    return capsule;
}

/* make_capsule(versioned=True, major=1, minor=3, flags=0, device_type=1, device_id=0,
 * buggy=False) for the Python producers. */
static PyObject *py_make_capsule(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"versioned",   "major",     "minor", "flags",
                               "device_type", "device_id", "buggy", NULL};
    struct tensor_spec spec = spec_default();
    int versioned = 1, buggy = 0, device_type = kDLCPU, device_id = 0;
    unsigned int major = 1, minor = 3;
    unsigned long long flags = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pIIKiip", keywords, &versioned, &major, &minor,
                                     &flags, &device_type, &device_id, &buggy))
        return NULL;
    spec.versioned = versioned;
    spec.major = major;
    spec.minor = minor;
    spec.flags = flags;
    spec.device.device_type = (DLDeviceType)device_type;
    spec.device.device_id = device_id;
    return capsule_new(&spec, NULL, buggy ? buggy_capsule_destructor : test_capsule_destructor);
}

static PyMethodDef make_capsule_def = {"make_capsule", (PyCFunction)(void (*)(void))py_make_capsule,
                                       METH_VARARGS | METH_KEYWORDS, NULL};

static const char producers_code[] =
    "class Good:\n"
    "    def __init__(self, readonly=False):\n"
    "        self.readonly = readonly\n"
    "    def __dlpack_device__(self):\n"
    "        return (1, 0)\n"
    "    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):\n"
    "        if stream is not None:\n"
    "            raise BufferError('stream must be None for CPU arrays')\n"
    "        if dl_device is not None and tuple(dl_device) != (1, 0):\n"
    "            raise BufferError('unsupported device')\n"
    "        if max_version is None or max_version[0] < 1:\n"
    "            if self.readonly:\n"
    "                raise BufferError('read-only arrays need a versioned capsule')\n"
    "            return make_capsule(versioned=False)\n"
    "        flags = (1 if self.readonly else 0) | (2 if copy else 0)\n"
    "        return make_capsule(versioned=True, flags=flags)\n"
    "\n"
    "class Old:\n"
    "    def __dlpack_device__(self):\n"
    "        return (1, 0)\n"
    "    def __dlpack__(self, stream=None):\n"
    "        return make_capsule(versioned=False)\n"
    "\n"
    "class Bad:\n"
    "    '''Exports the capsule it was told to make, whatever the consumer asked.'''\n"
    "    def __init__(self, **capsule):\n"
    "        self.capsule = capsule\n"
    "    def __dlpack_device__(self):\n"
    "        return [1, 0]\n"
    "    def __dlpack__(self, **kwargs):\n"
    "        return make_capsule(**self.capsule)\n"
    "\n"
    "class Raises:\n"
    "    def __dlpack_device__(self):\n"
    "        return (1, 0)\n"
    "    def __dlpack__(self, **kwargs):\n"
    "        raise RuntimeError('the producer fails')\n";

/* The producers above, with make_capsule among their globals (looked up when they export). */
static int producers_define(void)
{
    if (test_python_define(producers_code) < 0)
        return -1;
    PyObject *function = PyCFunction_New(&make_capsule_def, NULL);
    int rc = function ? PyDict_SetItemString(test_producers, "make_capsule", function) : -1;
    Py_XDECREF(function);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Tensor level
 */

struct checked {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
};

static struct checked check_tensor(const DLTensor *tensor, struct ic_dlpack_header header)
{
    struct checked out;
    ic_diag_init(&out.diag);
    memset(&out.view, 0, sizeof(out.view));
    out.have_view = false;
    ic_dlpack_check_tensor(tensor, &header, &out.diag, &out.view, &out.have_view);
    return out;
}

static const struct ic_dlpack_header v13 = {true, 1, 3, 0};
static const struct ic_dlpack_header v10 = {true, 1, 0, 0};
static const struct ic_dlpack_header legacy = {false, 0, 0, 0};

/* Whether `tensor`, checked as the tensor of a 1.3 capsule, has an error of `rule`. */
static bool v13_error(const DLTensor *tensor, enum ic_rule rule)
{
    struct checked c = check_tensor(tensor, v13);
    return has_error(&c.diag, rule);
}

/* A valid 2x3 float32 tensor on the CPU over `data`, C-contiguous. Its shape and strides are
 * never written: a test breaks a copy of the tensor by pointing it at arrays of its own. */
static DLTensor valid_tensor(float *data)
{
    static int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
    DLTensor tensor = {.data = data,
                       .device = {kDLCPU, 0},
                       .ndim = 2,
                       .dtype = {kDLFloat, 32, 1},
                       .shape = shape,
                       .strides = strides,
                       .byte_offset = 0};
    return tensor;
}

static void test_tensor_rules(void)
{
    float data[16] = {0};
    DLTensor base = valid_tensor(data);
    struct checked c = check_tensor(&base, v13);
    TAP_OK(c.diag.count == 0 && c.have_view, "a valid 2x3 float32 tensor has no findings");
    TAP_OK(c.view.data == (uintptr_t)data && c.view.strides[0] == 12 && c.view.strides[1] == 4 &&
               c.view.dtype == IC_DTYPE_FLOAT32 && c.view.itemsize == 4,
           "the view has byte strides (12, 4) and dtype float32");
    TAP_OK(c.view.readonly_known && !c.view.readonly,
           "a versioned tensor without READ_ONLY is writable");

    struct ic_dlpack_header ro = v13;
    ro.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    c = check_tensor(&base, ro);
    TAP_OK(c.view.readonly && c.view.readonly_known, "READ_ONLY makes the view read-only");
    c = check_tensor(&base, legacy);
    TAP_OK(c.diag.count == 0 && !c.view.readonly_known, "a legacy tensor cannot say read-only");

    DLTensor t = base;
    t.strides = NULL;
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_SHAPE_STRIDES),
           "strides NULL in a 1.3 capsule is an error");
    show_diag("strides NULL, 1.3", &c.diag);
    c = check_tensor(&t, v10);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.strides[0] == 12,
           "strides NULL in a 1.0 capsule means C-contiguous");
    c = check_tensor(&t, legacy);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.strides[1] == 4,
           "strides NULL in a legacy capsule means C-contiguous");

    t = base;
    t.ndim = -1;
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_NDIM) && !c.have_view, "negative ndim is an error");
    t.ndim = 65;
    TAP_OK(v13_error(&t, IC_RULE_DLPACK_NDIM), "ndim 65 is an error");

    /* ndim 0: shape and strides point nowhere valid and must not be read */
    t = base;
    t.ndim = 0;
    t.shape = (int64_t *)(uintptr_t)8;
    t.strides = (int64_t *)(uintptr_t)8;
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.ndim == 0,
           "a 0-d tensor is valid and its shape/strides are never read");
    t.shape = NULL;
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.count == 0, "a 0-d tensor may have shape NULL");

    /* A broken shape: an error, and no view. */
    static int64_t negative[2] = {2, -3}, huge[2] = {INT64_MAX / 2, 4};
    static const struct {
        int64_t *shape;
        enum ic_rule rule;
        const char *what;
    } bad_shapes[] = {
        {NULL, IC_RULE_DLPACK_SHAPE_STRIDES, "shape NULL with ndim 2 is an error"},
        {negative, IC_RULE_DLPACK_SHAPE, "a negative extent is an error"},
        {huge, IC_RULE_DLPACK_SHAPE, "an overflowing shape is an error"},
    };
    for (size_t i = 0; i < sizeof(bad_shapes) / sizeof(bad_shapes[0]); i++) {
        t = base;
        t.shape = bad_shapes[i].shape;
        c = check_tensor(&t, v13);
        TAP_OK(has_error(&c.diag, bad_shapes[i].rule) && !c.have_view, "%s", bad_shapes[i].what);
    }
    show_diag("overflowing shape", &c.diag);

    int64_t far[2] = {INT64_MAX / 2, 1};
    t = base;
    t.strides = far;
    TAP_OK(v13_error(&t, IC_RULE_DLPACK_STRIDES),
           "element strides whose bytes overflow are an error");

    t = base;
    t.byte_offset = 8;
    c = check_tensor(&t, v13);
    TAP_OK(c.have_view && c.view.data == (uintptr_t)data + 8,
           "byte_offset 8 is applied to view.data");

    t = base;
    t.data = (void *)(UINTPTR_MAX - 4);
    t.byte_offset = 16;
    TAP_OK(v13_error(&t, IC_RULE_DLPACK_ADDRESS), "data + byte_offset wrapping around is an error");

    t = base;
    t.byte_offset = 1;
    c = check_tensor(&t, v13);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_ADDRESS) && c.diag.errors == 0,
           "a float32 element at an odd address is only a warning");

    t = base;
    t.dtype = (DLDataType){kDLBool, 16, 1};
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_DTYPE) && !c.have_view,
           "bool with 16 bits is an error");
    /* Other dtypes DLPack does not allow: each an error. */
    static const struct {
        DLDataType dtype;
        const char *what;
    } bad_dtypes[] = {
        {{kDLComplex, 32, 1}, "complex with 32 bits is an error"},
        {{17, 8, 1}, "fp4 (code 17) with 8 bits is an error"},
        {{15, 8, 1}, "fp6 (code 15) with 8 bits is an error"},
        {{40, 8, 1}, "type code 40 is an error"},
        {{kDLFloat, 32, 0}, "lanes 0 is an error"},
    };
    for (size_t i = 0; i < sizeof(bad_dtypes) / sizeof(bad_dtypes[0]); i++) {
        t.dtype = bad_dtypes[i].dtype;
        TAP_OK(v13_error(&t, IC_RULE_DLPACK_DTYPE), "%s", bad_dtypes[i].what);
    }
    t.dtype = (DLDataType){kDLFloat, 32, 4};
    c = check_tensor(&t, v13);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_DTYPE) && c.diag.errors == 0,
           "lanes 4 is a warning");
    t.dtype = (DLDataType){10, 8, 1}; /* kDLFloat8_e4m3fn */
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.dtype == IC_DTYPE_FLOAT8_E4M3FN &&
               c.view.itemsize == 1,
           "float8_e4m3fn is legal: no finding, a view of 1-byte float8_e4m3fn items");
    t.dtype = (DLDataType){17, 4, 1};
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.errors == 0 && has_warning(&c.diag, IC_RULE_DLPACK_SUBBYTE) && !c.have_view,
           "packed fp4 is legal but has no byte-strided view");
    struct ic_dlpack_header padded = v13;
    padded.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
    c = check_tensor(&t, padded);
    TAP_OK(c.diag.count == 0 && c.have_view && c.view.itemsize == 1,
           "padded fp4 is a view of 1-byte items");
    t = base;
    c = check_tensor(&t, padded);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_SUBBYTE) && c.diag.errors == 0,
           "the padded flag on float32 is a warning");

    t = base;
    t.device = (DLDevice){(DLDeviceType)5, 0};
    TAP_OK(v13_error(&t, IC_RULE_DLPACK_DEVICE), "device type 5 is an error");
    t.device = (DLDevice){kDLCUDA, -1};
    TAP_OK(v13_error(&t, IC_RULE_DLPACK_DEVICE), "device_id -1 is an error");
    t.device = (DLDevice){kDLCPU, 1};
    c = check_tensor(&t, v13);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_DEVICE) && c.diag.errors == 0,
           "CPU device_id 1 is a warning");
    t.device = (DLDevice){(DLDeviceType)18, 0}; /* kDLTrn */
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.count == 0 && c.view.device_type == 18, "device type 18 (Trainium) is known");

    t = base;
    t.data = NULL;
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_DATA) && !c.have_view,
           "data NULL with 6 elements is an error");
    int64_t empty[2] = {0, 3};
    t.shape = empty;
    c = check_tensor(&t, v13);
    TAP_OK(c.diag.count == 0 && c.have_view, "data NULL with 0 elements is fine");

    TAP_OK(ic_dlpack_check_tensor(NULL, &v13, &c.diag, &c.view, &c.have_view) == IC_EINVAL,
           "a NULL tensor is IC_EINVAL");
}

/* ---------------------------------------------------------------------------------------
 * Capsule level
 */

struct capsule_checked {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
    struct ic_dlpack_capsule info;
};

static struct capsule_checked check_capsule(PyObject *capsule)
{
    struct capsule_checked out;
    ic_diag_init(&out.diag);
    out.have_view = false;
    ic_dlpack_check_capsule(capsule, &out.info, &out.diag, &out.view, &out.have_view);
    return out;
}

static void test_capsule_rules(void)
{
    struct tensor_spec spec = spec_default();
    int before = deleter_calls;
    PyObject *capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    struct capsule_checked c = check_capsule(capsule);
    char detail[96];
    ic_dlpack_describe(&c.info, detail, sizeof(detail));
    TAP_OK(c.diag.count == 0 && c.info.usable && c.info.readable && c.have_view,
           "a fresh versioned capsule is valid");
    TAP_OK(strcmp(detail, "dltensor_versioned 1.3 flags=0x0") == 0, "described as %s", detail);
    TAP_OK(deleter_calls == before, "checking calls no deleter");
    Py_DECREF(capsule);
    TAP_OK(deleter_calls == before + 1, "the unconsumed capsule's destructor calls the deleter");

    spec.versioned = false;
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    c = check_capsule(capsule);
    ic_dlpack_describe(&c.info, detail, sizeof(detail));
    TAP_OK(c.diag.count == 0 && !c.info.header.versioned && strcmp(detail, "dltensor") == 0,
           "a fresh legacy capsule is valid");
    Py_DECREF(capsule);

    spec = spec_default();
    capsule = capsule_new(&spec, "used_dltensor_versioned", NULL);
    DLManagedTensorVersioned *managed = PyCapsule_GetPointer(capsule, "used_dltensor_versioned");
    before = deleter_calls;
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_CAPSULE_NAME) && c.info.used && !c.info.usable,
           "a used_ capsule is rejected");
    TAP_OK(deleter_calls == before, "a used_ capsule's deleter is not called");
    Py_DECREF(capsule);
    managed->deleter(managed);

    capsule = capsule_new(&spec, "dltensor_v2", NULL);
    managed = PyCapsule_GetPointer(capsule, "dltensor_v2");
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_CAPSULE_NAME) && !c.info.usable,
           "a wrong name is rejected");
    Py_DECREF(capsule);
    managed->deleter(managed);

    /* a name on the heap (rule 2.5.7) */
    char *heap_name = strdup("dltensor_versioned");
    capsule = capsule_new(&spec, heap_name, test_capsule_destructor);
    c = check_capsule(capsule);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_STATIC_NAME) && c.diag.errors == 0 &&
               c.info.readable,
           "a heap-allocated capsule name is a warning");
    show_diag("heap name", &c.diag);
    Py_DECREF(capsule);
    free(heap_name);

    PyObject *number = PyLong_FromLong(7);
    c = check_capsule(number);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_CAPSULE_NAME), "an int is no capsule");
    Py_DECREF(number);

    struct test_tensor *block = test_tensor_new(&spec);
    capsule = PyCapsule_New(block, NULL, NULL);
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_CAPSULE_NAME), "an unnamed capsule is rejected");
    Py_DECREF(capsule);
    block->managed.versioned.deleter(&block->managed.versioned);

    /* Major version 2: only the deleter may be used. The tensor is poisoned so that any read
     * of it would produce tensor findings (or crash). */
    spec = spec_default();
    spec.major = 2;
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    managed = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    managed->dl_tensor.ndim = -7;
    managed->dl_tensor.shape = (int64_t *)(uintptr_t)8;
    managed->dl_tensor.dtype.code = 99;
    before = deleter_calls;
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_MAJOR_VERSION) && c.diag.count == 1 && c.info.usable &&
               !c.info.readable && !c.have_view,
           "major version 2 is rejected and nothing past the flags is read");
    show_diag("major 2", &c.diag);
    Py_DECREF(capsule);
    TAP_OK(deleter_calls == before + 1, "the major-2 capsule's deleter still runs once");

    spec = spec_default();
    spec.flags = DLPACK_FLAG_BITMASK_READ_ONLY | (1u << 5);
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    c = check_capsule(capsule);
    TAP_OK(has_warning(&c.diag, IC_RULE_DLPACK_FLAG_BITS) && c.diag.errors == 0 && c.view.readonly,
           "an undefined flag bit is a warning; READ_ONLY still applies");
    Py_DECREF(capsule);

    spec = spec_default();
    spec.no_strides = true;
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_SHAPE_STRIDES),
           "a 1.3 capsule with strides NULL is an error");
    Py_DECREF(capsule);
    spec.minor = 1;
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    c = check_capsule(capsule);
    TAP_OK(c.diag.count == 0, "a 1.1 capsule with strides NULL is fine");
    Py_DECREF(capsule);
}

/* ---------------------------------------------------------------------------------------
 * Guarded reads: a producer that points at memory that is not there
 */

static void test_guarded_tensor(void)
{
    size_t page;
    unsigned char *base = page_before_hole(&page);
    const void *hole = base + page;
    float data[16] = {0};
    DLTensor ok = valid_tensor(data);

    DLTensor t = ok;
    t.shape = (int64_t *)hole;
    struct checked c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_SHAPE_STRIDES) && !c.have_view,
           "a shape array in an unmapped page is dlpack.shape_strides, and no view");
    show_diag("unmapped shape", &c.diag);
    t = ok;
    t.strides = (int64_t *)(base + page - 8); /* strides[0] mapped, strides[1] not */
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_SHAPE_STRIDES) && !c.have_view,
           "a strides array running into an unmapped page is dlpack.shape_strides");

    t = ok;
    t.byte_offset = (uint64_t)1 << 40;
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_ADDRESS) && !c.have_view,
           "byte_offset 2^40 puts the elements in no mapped memory: dlpack.address, an error");
    show_diag("byte_offset 2^40", &c.diag);
    t = ok;
    t.data = (void *)hole;
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_ADDRESS) && !c.have_view,
           "data in an unmapped page is dlpack.address");
    t.data = base + page - 12; /* 3 of the 6 floats mapped */
    c = check_tensor(&t, v13);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_ADDRESS) && !c.have_view,
           "elements that run past the mapped memory are dlpack.address");
    t.device = (DLDevice){kDLCUDA, 0};
    c = check_tensor(&t, v13);
    TAP_OK(!has_error(&c.diag, IC_RULE_DLPACK_ADDRESS) && c.have_view,
           "device memory is not read on the host (the driver checks it)");
    munmap(base, page);
}

static void test_guarded_capsule(void)
{
    size_t page;
    unsigned char *base = page_before_hole(&page);
    void *hole = base + page;

    PyObject *capsule = PyCapsule_New(hole, "dltensor_versioned", NULL);
    struct capsule_checked c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_MANAGED_TENSOR) && !c.info.usable &&
               c.info.unreadable && !c.have_view,
           "a capsule pointing at an unmapped page is dlpack.managed_tensor, unusable");
    show_diag("unmapped struct", &c.diag);
    Py_DECREF(capsule);

    /* The header (version to flags) is readable, the tensor after it is not: the deleter can
     * be reached, the tensor cannot be read. */
    unsigned char *near_end = base + page - offsetof(DLManagedTensorVersioned, dl_tensor);
    DLManagedTensorVersioned header = {.version = {1, 3}, .deleter = test_deleter_versioned};
    memcpy(near_end, &header, offsetof(DLManagedTensorVersioned, dl_tensor));
    capsule = PyCapsule_New(near_end, "dltensor_versioned", NULL);
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_MANAGED_TENSOR) && c.info.usable && !c.info.readable &&
               c.info.unreadable,
           "a versioned struct cut short by an unmapped page: usable (its deleter can be "
           "reached), not readable");
    Py_DECREF(capsule);

    /* A name in memory that is gone: every consumer reads it. */
    struct tensor_spec spec = spec_default();
    struct test_tensor *t = test_tensor_new(&spec);
    capsule = PyCapsule_New(t, (const char *)hole, NULL);
    c = check_capsule(capsule);
    TAP_OK(has_error(&c.diag, IC_RULE_DLPACK_MANAGED_TENSOR) && !c.info.usable && c.info.unreadable,
           "a capsule whose name is in an unmapped page is dlpack.managed_tensor");
    Py_DECREF(capsule);

    /* A managed struct in read-only memory cannot be instrumented, and is left as it was. */
    memset(base, 0, page);
    DLManagedTensor *legacy = (DLManagedTensor *)base;
    legacy->deleter = test_deleter_legacy;
    mprotect(base, page, PROT_READ);
    int id = -1;
    TAP_OK(ic_dlpack_watch(legacy, false, &id) == IC_EFAULT &&
               legacy->deleter == test_deleter_legacy,
           "a struct in read-only memory is not watched and keeps its deleter");
    free(t);
    munmap(base, page);

    /* The producer's own code (a __dlpack_device__ after the export) calls the deleter of a
     * tensor the consumer took: early, held back; for a tensor nobody took (its capsule's
     * destructor, run by the producer's code) the call is legitimate and forwarded. */
    struct ic_dlpack_watch_state state;
    spec.versioned = false;
    for (int taken = 1; taken >= 0; taken--) {
        t = test_tensor_new(&spec);
        int before = deleter_calls;
        TAP_OK(ic_dlpack_watch(&t->managed.legacy, false, &id) == 0, "watched (taken=%d)", taken);
        if (taken)
            ic_dlpack_watch_mark_consumed(id);
        ic_dlpack_producer_call_begin();
        bool gc_paused = !PyGC_IsEnabled();
        t->managed.legacy.deleter(&t->managed.legacy);
        ic_dlpack_producer_call_end();
        TAP_OK(gc_paused && PyGC_IsEnabled(),
               "garbage collection pauses during the producer's call, and resumes after");
        ic_dlpack_watch_state(id, &state);
        if (taken) {
            TAP_OK(state.early_calls == 1 && state.calls == 0 && deleter_calls == before,
                   "a deleter call from the producer's code for a taken tensor is early, not "
                   "forwarded");
            t->managed.legacy.deleter(&t->managed.legacy); /* the consumer lets go */
        } else {
            TAP_OK(state.early_calls == 0 && state.calls == 1 && deleter_calls == before + 1,
                   "for a tensor nobody took it is the destructor's call, forwarded");
        }
        ic_dlpack_watch_release(id);
    }
}

/* ---------------------------------------------------------------------------------------
 * The deleter watch
 */

static void *call_deleter_thread(void *arg)
{
    DLManagedTensor *managed = arg;
    managed->deleter(managed);
    return NULL;
}

static void test_watch(void)
{
    struct tensor_spec spec = spec_default();
    spec.versioned = false;
    struct test_tensor *block = test_tensor_new(&spec);
    DLManagedTensor *managed = &block->managed.legacy;
    int id = -1, again = -1;
    struct ic_dlpack_watch_state state;
    int before = deleter_calls, unmatched = ic_dlpack_watch_unmatched();

    TAP_OK(ic_dlpack_watch(managed, false, &id) == 0 && id > 0, "a legacy struct is watched");
    TAP_OK(ic_dlpack_watch(managed, false, &again) == 0 && again == id,
           "watching it again returns the same id");
    void (*deleter)(DLManagedTensor *) = managed->deleter;
    deleter(managed);
    deleter(managed); /* a double call: counted, not forwarded */
    TAP_OK(ic_dlpack_watch_state(id, &state) == 0 && state.calls == 2 && state.forwarded &&
               state.had_deleter,
           "two calls are counted");
    TAP_OK(deleter_calls == before + 1, "the producer's deleter ran once");
    ic_dlpack_watch_release(id);
    TAP_OK(ic_dlpack_watch_state(id, &state) == IC_ENOTFOUND,
           "a released entry whose deleter ran is gone");
    deleter(managed);
    TAP_OK(ic_dlpack_watch_unmatched() == unmatched + 1 && deleter_calls == before + 1,
           "a call after retirement is unmatched and not forwarded");

    /* released before the deleter runs: the entry retires itself on the call */
    block = test_tensor_new(&spec);
    managed = &block->managed.legacy;
    TAP_OK(ic_dlpack_watch(managed, false, &id) == 0, "a second struct is watched");
    ic_dlpack_watch_release(id);
    TAP_OK(ic_dlpack_watch_state(id, &state) == 0 && state.calls == 0,
           "a released entry lives until its deleter runs");
    pthread_t thread;
    before = deleter_calls;
    pthread_create(&thread, NULL, call_deleter_thread, managed);
    pthread_join(thread, NULL);
    TAP_OK(deleter_calls == before + 1, "the deleter forwarded from another thread");
    TAP_OK(ic_dlpack_watch_state(id, &state) == IC_ENOTFOUND, "and the released entry retired");

    /* a struct with no deleter: calls are still counted */
    spec.versioned = true;
    block = test_tensor_new(&spec);
    block->managed.versioned.deleter = NULL;
    TAP_OK(ic_dlpack_watch(&block->managed.versioned, true, &id) == 0 &&
               block->managed.versioned.deleter != NULL,
           "a NULL deleter is instrumented too");
    block->managed.versioned.deleter(&block->managed.versioned);
    TAP_OK(ic_dlpack_watch_state(id, &state) == 0 && state.calls == 1 && !state.had_deleter &&
               !state.forwarded,
           "its call is counted and nothing is forwarded");
    ic_dlpack_watch_release(id);
    free(block);

    /* interopcheck's consumer holds the tensor: a call now is the producer's, held back */
    spec.versioned = false;
    block = test_tensor_new(&spec);
    managed = &block->managed.legacy;
    TAP_OK(ic_dlpack_watch(managed, false, &id) == 0, "a third struct is watched");
    ic_dlpack_watch_mark_consumed(id);
    ic_dlpack_watch_hold(id, true);
    before = deleter_calls;
    managed->deleter(managed);
    TAP_OK(ic_dlpack_watch_state(id, &state) == 0 && state.early_calls == 1 && state.calls == 0 &&
               deleter_calls == before,
           "a call while the consumer holds the tensor is early and not forwarded");
    ic_dlpack_watch_hold(id, false);
    managed->deleter(managed);
    TAP_OK(ic_dlpack_watch_state(id, &state) == 0 && state.early_calls == 1 && state.calls == 1 &&
               deleter_calls == before + 1,
           "the consumer's own call afterwards is forwarded, once");
    ic_dlpack_watch_release(id);
}

/* ---------------------------------------------------------------------------------------
 * The proxy, end to end with a consumer written here
 */

static PyObject *call_dlpack(PyObject *obj, PyObject *kwargs)
{
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__"), *no_args = PyTuple_New(0);
    PyObject *capsule = method && no_args ? PyObject_Call(method, no_args, kwargs) : NULL;
    Py_XDECREF(method);
    Py_XDECREF(no_args);
    return capsule;
}

static PyObject *max_version_kwargs(const char *extra_key, PyObject *extra_value)
{
    PyObject *kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 3);
    if (extra_key)
        PyDict_SetItemString(kwargs, extra_key, extra_value);
    return kwargs;
}

/* A consumer that renames (or not) and calls the deleter `calls` times, through a proxy that
 * records into a fresh *rec. */
static void run_proxy_consumer(const char *producer_expr, bool rename, int calls,
                               struct ic_export_record *rec, int *ret_producer_deleter_calls)
{
    PyObject *target = producer_eval(producer_expr);
    PyObject *proxy = proxy_open(&ic_dlpack_ops, target, rec);
    PyObject *kwargs = max_version_kwargs(NULL, NULL);
    PyObject *device = PyObject_CallMethod(proxy, "__dlpack_device__", NULL);
    int before = deleter_calls;
    void (*deleter)(DLManagedTensorVersioned *) = NULL;
    DLManagedTensorVersioned *managed = NULL;

    PyObject *capsule = call_dlpack(proxy, kwargs);
    if (capsule && rename) {
        managed = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        PyCapsule_SetName(capsule, "used_dltensor_versioned");
        deleter = managed->deleter;
        for (int i = 0; i < calls; i++)
            deleter(managed);
    }
    Py_XDECREF(capsule);
    ic_dlpack_ops.observe(proxy, rec);
    ic_dlpack_ops.finish(proxy, rec);
    if (rename && calls == 0 && deleter)
        deleter(managed); /* the leaked tensor, freed now through the orphaned entry */
    *ret_producer_deleter_calls = deleter_calls - before;
    proxy_close(proxy);
    Py_XDECREF(device);
    Py_DECREF(kwargs);
    Py_DECREF(target);
}

static void test_proxy(void)
{
    struct ic_export_record rec;
    int producer_calls = 0;

    run_proxy_consumer("Good()", true, 1, &rec, &producer_calls);
    TAP_OK(rec.export_calls == 1 && strcmp(rec.request, "__dlpack__(max_version=(1, 3))") == 0,
           "the proxy records the request (%s)", rec.request);
    TAP_OK(rec.have_view && rec.view.dtype == IC_DTYPE_FLOAT32 && rec.diag.errors == 0 &&
               strcmp(rec.detail, "dltensor_versioned 1.3 flags=0x0") == 0,
           "the first export fills the view and detail (%s)", rec.detail);
    TAP_OK(rec.consumed && rec.lifetime_checked && rec.lifetime.count == 0 && producer_calls == 1,
           "rename + one deleter call: no lifetime finding");
    TAP_OK(rec.watch_count == 1 && rec.zero_copy_known && !rec.copy_flagged,
           "one watched deleter; zero copy is known");

    run_proxy_consumer("Good()", true, 2, &rec, &producer_calls);
    TAP_OK(has_error(&rec.lifetime, IC_RULE_DLPACK_DELETER_ONCE) && producer_calls == 1,
           "two deleter calls: a finding, and the producer's deleter ran once");
    show_diag("double call", &rec.lifetime);

    run_proxy_consumer("Good()", true, 0, &rec, &producer_calls);
    TAP_OK(has_error(&rec.lifetime, IC_RULE_DLPACK_DELETER_ONCE),
           "a consumed tensor whose deleter never ran leaks");
    TAP_OK(producer_calls == 1, "a late call after finish still reaches the producer once");

    run_proxy_consumer("Good()", false, 0, &rec, &producer_calls);
    TAP_OK(!rec.consumed && rec.lifetime.count == 0 && producer_calls == 1,
           "an unconsumed capsule: the destructor calls the deleter once at finish");

    run_proxy_consumer("Bad(buggy=True)", true, 1, &rec, &producer_calls);
    TAP_OK(has_error(&rec.lifetime, IC_RULE_DLPACK_DELETER_ONCE) && producer_calls == 1,
           "a destructor that calls the deleter after the rename: double call found");
    TAP_OK(has_error(&rec.diag, IC_RULE_DLPACK_DEVICE_TUPLE),
           "__dlpack_device__ returning a list is an error");

    /* requests that the export must answer */
    PyObject *target = producer_eval("Bad()"), *capsule = NULL, *kwargs = NULL;
    PyObject *proxy = proxy_open(&ic_dlpack_ops, target, &rec);
    capsule = call_dlpack(proxy, NULL);
    TAP_OK(capsule && has_error(&rec.diag, IC_RULE_DLPACK_LEGACY_REQUEST),
           "a versioned capsule for a request without max_version is an error");
    Py_XDECREF(capsule);
    PyObject *stream = PyLong_FromLong(1);
    kwargs = max_version_kwargs("stream", stream);
    capsule = call_dlpack(proxy, kwargs);
    TAP_OK(capsule && has_error(&rec.diag, IC_RULE_DLPACK_CPU_STREAM),
           "a CPU export that accepted stream=1 is an error");
    Py_XDECREF(capsule);
    Py_DECREF(kwargs);
    Py_DECREF(stream);
    kwargs = max_version_kwargs("copy", Py_True);
    capsule = call_dlpack(proxy, kwargs);
    TAP_OK(capsule && has_error(&rec.diag, IC_RULE_DLPACK_COPY_FLAG) && rec.copy_expected,
           "copy=True without IS_COPIED is an error");
    Py_XDECREF(capsule);
    Py_DECREF(kwargs);
    TAP_OK(rec.export_calls == 3 && rec.watch_count == 3, "three exports, three watched deleters");
    ic_dlpack_ops.finish(proxy, &rec);
    TAP_OK(rec.lifetime.errors == 0, "their capsules were destroyed, each deleter ran once");
    proxy_close(proxy);
    Py_DECREF(target);

    target = producer_eval("Good()");
    proxy = proxy_open(&ic_dlpack_ops, target, &rec);
    kwargs = max_version_kwargs("copy", Py_True);
    capsule = call_dlpack(proxy, kwargs);
    TAP_OK(capsule && rec.diag.errors == 0 && rec.copy_flagged && rec.copy_expected,
           "copy=True with IS_COPIED is conformant and flagged");
    Py_XDECREF(capsule);
    Py_DECREF(kwargs);
    ic_dlpack_ops.finish(proxy, &rec);
    proxy_close(proxy);
    Py_DECREF(target);

    target = producer_eval("Raises()");
    proxy = proxy_open(&ic_dlpack_ops, target, &rec);
    capsule = call_dlpack(proxy, NULL);
    bool runtime_error = !capsule && PyErr_ExceptionMatches(PyExc_RuntimeError);
    PyErr_Clear();
    TAP_OK(runtime_error && rec.producer_raised &&
               strcmp(rec.producer_exc_type, "RuntimeError") == 0,
           "the producer's exception reaches the consumer unchanged and is recorded");
    proxy_close(proxy);
    Py_DECREF(target);
}

/* Rule 2.5.11 for GPU capsules: the findings of one __dlpack__(max_version=(1, 3),
 * stream=...) through the proxy, from a producer that exports whatever it is asked. */
static void stream_export(int device_type, PyObject *stream, struct ic_export_record *rec)
{
    char expression[64];
    snprintf(expression, sizeof(expression), "Bad(device_type=%d)", device_type);
    PyObject *target = producer_eval(expression);
    PyObject *proxy = proxy_open(&ic_dlpack_ops, target, rec);
    PyObject *kwargs = max_version_kwargs("stream", stream);
    PyObject *capsule = call_dlpack(proxy, kwargs);
    if (!capsule)
        PyErr_Clear();
    Py_XDECREF(capsule);
    ic_dlpack_ops.finish(proxy, rec);
    proxy_close(proxy);
    Py_DECREF(kwargs);
    Py_DECREF(target);
    Py_DECREF(stream);
}

static void test_gpu_streams(void)
{
    struct ic_export_record rec;

    stream_export(kDLCUDA, PyLong_FromLong(0), &rec);
    TAP_OK(has_warning(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE) &&
               !has_error(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE) && rec.have_view &&
               rec.view.device_type == kDLCUDA,
           "CUDA: accepting stream=0 is a warning (should raise)");
    show_diag("CUDA stream=0", &rec.diag);
    stream_export(kDLCUDAManaged, PyLong_FromLong(0), &rec);
    TAP_OK(has_warning(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE),
           "CUDA managed memory: the same warning");
    stream_export(kDLCUDA, PyLong_FromLong(-2), &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE),
           "CUDA: accepting stream=-2 is an error");
    show_diag("CUDA stream=-2", &rec.diag);
    stream_export(kDLCUDA, PyUnicode_FromString("default"), &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE),
           "CUDA: accepting a str stream is an error");
    show_diag("CUDA stream='default'", &rec.diag);
    static const long long valid[] = {-1, 1, 2, 0x5555deadbe00LL};
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        stream_export(kDLCUDA, PyLong_FromLongLong(valid[i]), &rec);
        TAP_OK(rec.have_view && !ic_diag_has_rule(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE),
               "CUDA: stream=%lld is a valid request, no 2.5.11 finding", valid[i]);
    }
    stream_export(kDLROCM, PyLong_FromLong(0), &rec);
    TAP_OK(!ic_diag_has_rule(&rec.diag, IC_RULE_DLPACK_STREAM_VALUE),
           "ROCm: stream=0 is the default stream, no finding");
    stream_export(kDLCPU, PyLong_FromLong(2), &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_DLPACK_CPU_STREAM),
           "CPU: accepting any stream is an error");
    stream_export(kDLCPU, PyLong_FromLong(-2), &rec);
    TAP_OK(has_error(&rec.diag, IC_RULE_DLPACK_CPU_STREAM), "CPU: also stream=-2");
}

/* ---------------------------------------------------------------------------------------
 * The reference consumer
 */

struct consumed {
    struct ic_export_record rec;
    int rc;
    bool handle;
    int producer_calls; /* producer deleter calls once the handle was dropped */
};

static struct consumed consume(const char *producer_expr, enum ic_variant variant)
{
    struct consumed out;
    PyObject *target = producer_eval(producer_expr), *handle = NULL;
    int before = deleter_calls;

    out.rc = reference_import(&ic_dlpack_ops, target, variant, &out.rec, &handle);
    out.handle = handle != NULL;
    TAP_OK(!PyErr_Occurred(), "%s / %s leaves no exception pending", producer_expr,
           ic_variant_info(variant)->id[0] ? ic_variant_info(variant)->id : "plain");
    Py_XDECREF(handle);
    ic_dlpack_ops.finish(target, &out.rec);
    out.producer_calls = deleter_calls - before;
    Py_DECREF(target);
    return out;
}

static void test_reference_consumer(void)
{
    struct consumed c = consume("Good()", IC_VARIANT_NONE);
    TAP_OK(c.rc == 0 && c.handle && c.rec.consumed && c.rec.diag.errors == 0 &&
               c.rec.lifetime.count == 0 && c.producer_calls == 1,
           "plain: a good producer is imported, and the handle runs the deleter once");
    TAP_OK(strcmp(c.rec.request, "__dlpack__(max_version=(1, 3))") == 0, "plain request %s",
           c.rec.request);
    c = consume("Bad()", IC_VARIANT_NONE);
    TAP_OK(c.handle && has_error(&c.rec.diag, IC_RULE_DLPACK_DEVICE_TUPLE),
           "plain: __dlpack_device__ returning a list is an error");
    c = consume("Old()", IC_VARIANT_NONE);
    TAP_OK(c.handle && has_warning(&c.rec.diag, IC_RULE_DLPACK_PREFER_VERSIONED) &&
               c.rec.export_calls == 2 && strcmp(c.rec.detail, "dltensor") == 0 &&
               c.producer_calls == 1,
           "plain: a producer without max_version gets the TypeError fallback");
    c = consume("Raises()", IC_VARIANT_NONE);
    TAP_OK(c.rc == 0 && !c.handle && c.rec.producer_raised &&
               strcmp(c.rec.producer_exc_type, "RuntimeError") == 0,
           "plain: a producer's exception is recorded, no handle");

    c = consume("Good()", IC_VARIANT_DL_LEGACY);
    TAP_OK(c.handle && c.rec.diag.errors == 0 && strcmp(c.rec.detail, "dltensor") == 0 &&
               !c.rec.view.readonly_known && c.producer_calls == 1,
           "legacy: a legacy capsule, read-only unknown");
    TAP_OK(has_warning(&c.rec.diag, IC_RULE_DLPACK_COPY_FLAG),
           "legacy: a legacy capsule cannot say it copied");
    c = consume("Bad()", IC_VARIANT_DL_LEGACY);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_LEGACY_REQUEST),
           "legacy: a versioned answer to __dlpack__() is an error");
    c = consume("Good(readonly=True)", IC_VARIANT_DL_LEGACY);
    TAP_OK(!c.handle && c.rec.producer_raised &&
               strcmp(c.rec.producer_exc_type, "BufferError") == 0,
           "legacy: a BufferError is recorded as the producer's answer");

    c = consume("Good()", IC_VARIANT_DL_MAX_VERSION_2);
    TAP_OK(c.handle && c.rec.diag.errors == 0 && c.producer_calls == 1,
           "max_version_2: a 1.3 capsule answers (2, 0)");
    c = consume("Bad(major=3)", IC_VARIANT_DL_MAX_VERSION_2);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_MAX_VERSION) &&
               has_error(&c.rec.diag, IC_RULE_DLPACK_MAJOR_VERSION),
           "max_version_2: version 3.x is above the request and unknown");
    TAP_OK(c.handle && !c.rec.consumed && c.producer_calls == 1,
           "max_version_2: the rejected capsule is not consumed; its destructor runs the deleter");

    c = consume("Good()", IC_VARIANT_DL_COPY);
    TAP_OK(c.rec.diag.errors == 0 && c.rec.copy_expected && c.rec.copy_flagged,
           "copy: IS_COPIED is set");
    c = consume("Bad()", IC_VARIANT_DL_COPY);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_COPY_FLAG), "copy: IS_COPIED missing is an error");

    c = consume("Good()", IC_VARIANT_DL_NO_COPY);
    TAP_OK(c.rec.diag.errors == 0 && c.rec.no_copy_required && !c.rec.copy_flagged,
           "no_copy: IS_COPIED is clear");
    c = consume("Bad(flags=2)", IC_VARIANT_DL_NO_COPY);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_NO_COPY), "no_copy: IS_COPIED set is an error");

    c = consume("Good()", IC_VARIANT_DL_CPU_STREAM);
    TAP_OK(!c.handle && c.rec.refusal_required && c.rec.producer_raised,
           "cpu_stream: the refusal is recorded and required");
    TAP_OK(strcmp(c.rec.request, "__dlpack__(max_version=(1, 3), stream=1)") == 0,
           "cpu_stream request %s", c.rec.request);
    c = consume("Bad()", IC_VARIANT_DL_CPU_STREAM);
    TAP_OK(c.handle && c.rec.refusal_required && has_error(&c.rec.diag, IC_RULE_DLPACK_CPU_STREAM),
           "cpu_stream: exporting anyway is an error");

    c = consume("Good()", IC_VARIANT_DL_DEVICE_CPU);
    TAP_OK(c.handle && c.rec.diag.errors == 0, "dl_device_cpu: the CPU export matches (1, 0)");
    c = consume("Bad(device_type=2)", IC_VARIANT_DL_DEVICE_CPU);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_DEVICE_MATCH),
           "dl_device_cpu: a capsule on device (2, 0) is an error");
    c = consume("Bad(device_id=1)", IC_VARIANT_DL_DEVICE_CPU);
    TAP_OK(has_error(&c.rec.diag, IC_RULE_DLPACK_DEVICE) &&
               !has_error(&c.rec.diag, IC_RULE_DLPACK_DEVICE_MATCH),
           "dl_device_cpu: a capsule on host device (1, 1) breaks dlpack.device, not device_match "
           "(host memory is one address space: no consumer misreads it)");

    c = consume("Good(readonly=True)", IC_VARIANT_READONLY);
    TAP_OK(c.handle && c.rec.view.readonly && c.rec.view.readonly_known && c.rec.diag.errors == 0,
           "readonly: the READ_ONLY flag reaches the view");
    c = consume("Bad(versioned=False)", IC_VARIANT_READONLY);
    TAP_OK(has_warning(&c.rec.diag, IC_RULE_DLPACK_READONLY_FLAG) &&
               has_warning(&c.rec.diag, IC_RULE_DLPACK_PREFER_VERSIONED),
           "readonly: a legacy export cannot say read-only");
    /* The capsule dies as soon as interopcheck's consumer has taken it, so the destructor
     * runs while the tensor is held: the producer frees memory in use. */
    c = consume("Bad(buggy=True)", IC_VARIANT_NONE);
    TAP_OK(has_error(&c.rec.lifetime, IC_RULE_DLPACK_DELETER_EARLY) &&
               !has_error(&c.rec.lifetime, IC_RULE_DLPACK_DELETER_ONCE),
           "a producer whose destructor ignores the rename calls the deleter while the consumer "
           "holds the tensor: dlpack.deleter_early, not the consumer's fault");
    TAP_OK(c.producer_calls == 1, "and its deleter still ran once only, at the consumer's call");
}

/* ---------------------------------------------------------------------------------------
 * dlpack_capsule: a bare capsule
 */

static void test_bare_capsule(void)
{
    struct ic_export_record rec;
    struct tensor_spec spec = spec_default();
    spec.versioned = false;
    int before = deleter_calls;

    ic_export_record_init(&rec, IC_PROTOCOL_DLPACK_CAPSULE, IC_VARIANT_NONE);
    PyObject *capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    TAP_OK(ic_dlpack_capsule_ops.proxy_new == NULL &&
               ic_dlpack_capsule_ops.inspect(capsule, &rec) == 0,
           "inspect takes the capsule itself");
    TAP_OK(rec.have_view && rec.diag.errors == 0 && rec.watch_count == 1,
           "a legacy bare capsule is valid and instrumented");
    /* a consumer: rename, use, call the deleter */
    DLManagedTensor *managed = PyCapsule_GetPointer(capsule, "dltensor");
    PyCapsule_SetName(capsule, "used_dltensor");
    managed->deleter(managed);
    ic_dlpack_capsule_ops.observe(capsule, &rec);
    ic_dlpack_capsule_ops.finish(capsule, &rec);
    TAP_OK(rec.consumed && rec.lifetime.count == 0 && deleter_calls == before + 1,
           "rename + one call: no lifetime finding");
    Py_DECREF(capsule);

    spec.versioned = true;
    ic_export_record_init(&rec, IC_PROTOCOL_DLPACK_CAPSULE, IC_VARIANT_NONE);
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    ic_dlpack_capsule_ops.inspect(capsule, &rec);
    TAP_OK(has_warning(&rec.diag, IC_RULE_DLPACK_PREFER_VERSIONED) && rec.diag.errors == 0,
           "a versioned bare capsule is legal, with a note");
    managed = NULL;
    PyObject *handle = NULL;
    before = deleter_calls;
    TAP_OK(ic_dlpack_capsule_ops.reference_consume(capsule, &rec, &handle) == 0 && handle,
           "the reference consumer takes the inspected capsule");
    TAP_OK(rec.watch_count == 1, "the same struct is watched once");
    const char *name = PyCapsule_GetName(capsule);
    TAP_OK(name && strcmp(name, "used_dltensor_versioned") == 0, "and renames it");
    Py_DECREF(handle);
    TAP_OK(deleter_calls == before + 1, "releasing the handle runs the deleter");
    Py_DECREF(capsule);
    TAP_OK(deleter_calls == before + 1, "the renamed capsule's destructor does not");
    ic_dlpack_capsule_ops.finish(capsule, &rec);
    TAP_OK(rec.lifetime.count == 0, "no lifetime finding");

    /* a renamed capsule with the wrong used_ name */
    spec.versioned = true;
    ic_export_record_init(&rec, IC_PROTOCOL_DLPACK_CAPSULE, IC_VARIANT_NONE);
    capsule = capsule_new(&spec, NULL, test_capsule_destructor);
    ic_dlpack_capsule_ops.inspect(capsule, &rec);
    DLManagedTensorVersioned *versioned = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    PyCapsule_SetName(capsule, "used_dltensor");
    versioned->deleter(versioned);
    ic_dlpack_capsule_ops.observe(capsule, &rec);
    TAP_OK(has_error(&rec.lifetime, IC_RULE_DLPACK_CONSUMER_RENAME),
           "renaming a versioned capsule used_dltensor is an error");
    ic_dlpack_capsule_ops.finish(capsule, &rec);
    Py_DECREF(capsule);
}

static void test_ops_tables(void)
{
    TAP_OK(ops_registered(IC_PROTOCOL_DLPACK, &ic_dlpack_ops),
           "the dlpack ops are registered under their id");
    TAP_OK(ops_registered(IC_PROTOCOL_DLPACK_CAPSULE, &ic_dlpack_capsule_ops),
           "the dlpack_capsule ops are registered under their id");
}

int main(void)
{
    test_tensor_rules();
    test_guarded_tensor();
    test_watch();
    if (test_python_start() < 0)
        return 1;
    if (producers_define() < 0)
        return test_python_bail("cannot define the producers");
    test_capsule_rules();
    test_guarded_capsule();
    test_proxy();
    test_gpu_streams();
    test_reference_consumer();
    test_bare_capsule();
    test_ops_tables();
    test_python_stop();
    return tap_done();
}
