/* fuzz_dlpack: the DLPack validators (src/protocols/ic_dlpack.c) on managed structs built from the
 * input: ic_dlpack_check_capsule on a capsule of any name holding a DLManagedTensor or a
 * DLManagedTensorVersioned, and ic_dlpack_check_tensor on a bare DLTensor with any header.
 *
 * The validators read what the capsule points to through the guard (ic_guard.h), so any
 * pointer is a legal input: the harness can also hand over wild addresses (the struct, the
 * name, shape, strides). Good pointers point at blocks of exactly what the contract lets the
 * validator read, each ending where an inaccessible page begins (fuzz_tail): a versioned
 * struct whose major version is not 1 ends after its flags; shape and strides hold exactly
 * ndim entries, none when ndim is 0 or out of range. With only good pointers, and no element
 * to read on the host, a finding of unreadable memory is a broken promise. The data pointer
 * is the input's (never followed on the device, checked through the guard on the host) or a
 * place in a readable region. The deleter is never called.
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   u8  control  bits 0-2 the capsule: 0 "dltensor", 1 "dltensor_versioned", 2
 *                "used_dltensor", 3 "used_dltensor_versioned", 4 another name, 5 a heap
 *                copy of the right name (bit 3 picks versioned), 6 no name, 7 not a capsule;
 *                bit 3 versioned (for 5 and the bare tensor); bit 4 shape NULL; bit 5 strides
 *                NULL; bit 6 deleter NULL; bit 7 check the bare tensor instead of a capsule
 *   u32 major, u32 minor, u64 flags         the versioned header
 *   u64 data, i32 device_type, i32 device_id, i32 ndim, u8 code, u8 bits, u16 lanes,
 *   u64 byte_offset
 *   i64 shape[ndim], i64 strides[ndim]      when 0 < ndim <= IC_MAX_NDIM
 *   u8  wild     bit 0 the struct, bit 1 the name, bit 2 shape, bit 3 strides are the wild
 *                addresses below; bit 4 data points into the readable region (data modulo
 *                its size)
 *   u64 wild struct, u64 wild name, u64 wild shape, u64 wild strides
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include "fuzz_common.h"
#include "ic_dlpack.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_PYTHON_HARNESS()

/* The deleters: a validator never calls them (ic_dlpack.h). */
static void fuzz_deleter_legacy(DLManagedTensor *managed)
{
    (void)managed;
    fprintf(stderr, "fuzz_dlpack: a validator called the deleter\n");
    abort();
}

static void fuzz_deleter_versioned(DLManagedTensorVersioned *managed)
{
    (void)managed;
    fprintf(stderr, "fuzz_dlpack: a validator called the deleter\n");
    abort();
}

enum { SLOT_STRUCT, SLOT_SHAPE, SLOT_STRIDES, SLOT_NAME };

/* What the input says beyond the struct's own fields. */
struct pointers {
    uint8_t wild;
    uint64_t address[4]; /* struct, name, shape, strides */
};

/* Fills `tensor` from the input, shape and strides in their tail blocks. */
static void read_tensor(struct fuzz_reader *in, uint8_t control, DLTensor *tensor)
{
    tensor->data = (void *)(uintptr_t)fuzz_u64(in);
    tensor->device.device_type = (DLDeviceType)(int32_t)fuzz_u32(in);
    tensor->device.device_id = (int32_t)fuzz_u32(in);
    tensor->ndim = (int32_t)fuzz_u32(in);
    tensor->dtype.code = fuzz_u8(in);
    tensor->dtype.bits = fuzz_u8(in);
    tensor->dtype.lanes = fuzz_u16(in);
    tensor->byte_offset = fuzz_u64(in);
    size_t entries = tensor->ndim > 0 && tensor->ndim <= IC_MAX_NDIM ? (size_t)tensor->ndim : 0;
    int64_t *shape = fuzz_tail(SLOT_SHAPE, entries * sizeof(int64_t));
    int64_t *strides = fuzz_tail(SLOT_STRIDES, entries * sizeof(int64_t));
    for (size_t i = 0; i < entries; i++)
        shape[i] = (int64_t)fuzz_u64(in);
    for (size_t i = 0; i < entries; i++)
        strides[i] = (int64_t)fuzz_u64(in);
    tensor->shape = (control & 0x10) ? NULL : shape;
    tensor->strides = (control & 0x20) ? NULL : strides;
}

/* The wild addresses and the data placement, read after the struct. */
static void read_pointers(struct fuzz_reader *in, DLTensor *tensor, struct pointers *ret)
{
    ret->wild = fuzz_u8(in);
    for (int i = 0; i < 4; i++)
        ret->address[i] = fuzz_u64(in);
    if (ret->wild & 0x04)
        tensor->shape = (int64_t *)(uintptr_t)ret->address[2];
    if (ret->wild & 0x08)
        tensor->strides = (int64_t *)(uintptr_t)ret->address[3];
    if (ret->wild & 0x10)
        tensor->data = fuzz_region() + (uintptr_t)tensor->data % FUZZ_REGION_SIZE;
}

/* Host memory, whose elements the validator checks through the guard. */
static bool host_device(int32_t type)
{
    return type == kDLCPU || type == kDLCUDAHost || type == kDLROCMHost;
}

/* With only good pointers, and no element the guard would read, nothing is unreadable. */
static void check_readable(const DLTensor *tensor, const struct pointers *p, bool unreadable,
                           const struct ic_diag *diag)
{
    bool good = !(p->wild & 0x0f) && (!tensor->data || !host_device(tensor->device.device_type));
    if (good && (unreadable || fuzz_guard_faults() > 0)) {
        char text[1024];
        ic_diag_format(diag, text, sizeof(text));
        fprintf(stderr, "fuzz_dlpack: unreadable memory reported for good pointers: %s\n", text);
        FUZZ_CHECK(!unreadable && fuzz_guard_faults() == 0);
    }
}

static void check_view(const DLTensor *tensor, const struct ic_view *view)
{
    FUZZ_CHECK(view->ndim == tensor->ndim && view->ndim >= 0 && view->ndim <= IC_MAX_NDIM);
    FUZZ_CHECK(view->itemsize > 0);
    fuzz_check_view_items(view);
}

static void check_diag(const struct ic_diag *diag)
{
    FUZZ_CHECK(diag->count >= 0 && diag->count <= IC_DIAG_MAX);
    FUZZ_CHECK(diag->errors >= 0 && diag->errors <= diag->count + diag->dropped);
    for (int i = 0; i < diag->count; i++)
        FUZZ_CHECK(memchr(diag->items[i].message, '\0', IC_DIAG_MSG_MAX) != NULL);
}

static void fuzz_bare_tensor(struct fuzz_reader *in, uint8_t control)
{
    struct ic_dlpack_header header = {.versioned = (control & 0x08) != 0};
    header.major = fuzz_u32(in);
    header.minor = fuzz_u32(in);
    header.flags = fuzz_u64(in);
    /* The tensor itself is read directly (ic_dlpack.h): a heap block, watched by ASan. */
    DLTensor *tensor = malloc(sizeof(*tensor));
    FUZZ_CHECK(tensor);
    read_tensor(in, control, tensor);
    struct pointers p;
    read_pointers(in, tensor, &p);
    if (fuzz_in_asan_shadow((uintptr_t)tensor->data)) {
        free(tensor);
        return;
    }

    struct fuzz_validation v;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_dlpack_check_tensor(tensor, &header, &v.diag, &v.view, &v.have_view) == 0);
    check_diag(&v.diag);
    check_readable(tensor, &p, false, &v.diag);
    if (v.have_view)
        check_view(tensor, &v.view);
    free(tensor);
}

static void fuzz_capsule(struct fuzz_reader *in, uint8_t control)
{
    static const char *const names[] = {IC_DLPACK_NAME_LEGACY, IC_DLPACK_NAME_VERSIONED,
                                        IC_DLPACK_NAME_USED_LEGACY, IC_DLPACK_NAME_USED_VERSIONED,
                                        "dltensor_v2"};
    int kind = control & 0x07;
    bool versioned = kind == 1 || kind == 3 || ((kind == 5 || kind == 6) && (control & 0x08));
    uint32_t major = fuzz_u32(in), minor = fuzz_u32(in);
    uint64_t flags = fuzz_u64(in);

    /* A versioned struct of another major version is read up to its flags only. */
    size_t struct_size = !versioned ? sizeof(DLManagedTensor)
                         : major == DLPACK_MAJOR_VERSION
                             ? sizeof(DLManagedTensorVersioned)
                             : offsetof(DLManagedTensorVersioned, dl_tensor);
    void *managed = fuzz_tail(SLOT_STRUCT, struct_size);
    memset(managed, 0, struct_size);
    DLTensor tensor;
    read_tensor(in, control, &tensor);
    struct pointers p;
    read_pointers(in, &tensor, &p);
    if (fuzz_in_asan_shadow((uintptr_t)tensor.data))
        return;
    if (versioned) {
        DLManagedTensorVersioned *v = managed;
        v->version.major = major;
        v->version.minor = minor;
        v->flags = flags;
        v->deleter = (control & 0x40) ? NULL : fuzz_deleter_versioned;
        if (major == DLPACK_MAJOR_VERSION)
            v->dl_tensor = tensor;
    } else {
        DLManagedTensor *legacy = managed;
        legacy->deleter = (control & 0x40) ? NULL : fuzz_deleter_legacy;
        legacy->dl_tensor = tensor;
    }
    void *pointer = (p.wild & 0x01) ? (void *)(uintptr_t)p.address[0] : managed;

    const char *name = NULL;
    if (kind <= 4) {
        name = names[kind];
    } else if (kind == 5) {
        /* an allocated name (rule 2.5.7), ending at an inaccessible page */
        const char *text = versioned ? IC_DLPACK_NAME_VERSIONED : IC_DLPACK_NAME_LEGACY;
        char *copy = fuzz_tail(SLOT_NAME, strlen(text) + 1);
        memcpy(copy, text, strlen(text) + 1);
        name = copy;
    }
    if (p.wild & 0x02)
        name = (const char *)(uintptr_t)p.address[1];
    /* PyCapsule_New refuses a NULL pointer; such a capsule is not what producers can make. */
    PyObject *capsule =
        kind == 7 || !pointer ? PyLong_FromLong(1) : PyCapsule_New(pointer, name, NULL);
    FUZZ_CHECK(capsule != NULL);

    struct ic_dlpack_capsule info;
    struct fuzz_validation v;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_dlpack_check_capsule(capsule, &info, &v.diag, &v.view, &v.have_view) == 0);
    fuzz_check_no_exception("ic_dlpack_check_capsule");
    check_diag(&v.diag);
    check_readable(&tensor, &p, info.unreadable, &v.diag);
    FUZZ_CHECK(!info.readable || info.usable);
    FUZZ_CHECK(!v.have_view || (info.readable && !info.unreadable));
    FUZZ_CHECK(!info.usable || info.managed == pointer);
    if (info.readable) {
        FUZZ_CHECK(info.header.versioned == versioned);
        FUZZ_CHECK(!versioned || info.header.major == DLPACK_MAJOR_VERSION);
        if (!(p.wild & 0x01))
            FUZZ_CHECK(memcmp(&info.tensor, &tensor, sizeof(tensor)) == 0);
    }
    if (v.have_view)
        check_view(&info.tensor, &v.view);
    char described[128];
    ic_dlpack_describe(&info, described, sizeof(described));
    Py_DECREF(capsule);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader in;
    fuzz_reader_init(&in, data, size);
    uint8_t control = fuzz_u8(&in);
    if (control & 0x80)
        fuzz_bare_tensor(&in, control);
    else
        fuzz_capsule(&in, control);
    return 0;
}
