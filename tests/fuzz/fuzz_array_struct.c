/* fuzz_array_struct: the __array_struct__ validator (ic_array_struct_check,
 * src/protocols/ic_array_struct.c) on PyArrayInterface structs built from the input, in a capsule.
 *
 * The validator copies the struct and its arrays through the guard (ic_guard.h), so any
 * pointer is a legal input: the harness can also hand over wild addresses (the struct, shape,
 * strides). Good pointers point at blocks of exactly what the contract lets the validator
 * read, each ending where an inaccessible page begins (fuzz_tail): the struct, and shape and
 * strides of exactly nd entries (none when nd is 0 or out of range). With only good pointers
 * and no data, a finding of unreadable memory is a broken promise. descr is a pointer the
 * validator may compare with NULL but never follow (an unmapped address). data is the input's
 * (the validator checks the elements through the guard) or a place in a readable region.
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   u8  control  bits 0-1: 0 an unnamed capsule, 1 a named one, 2 not a capsule, 3 unnamed;
 *                bit 2 shape NULL; bit 3 strides NULL; bit 4 descr set; bit 5 data NULL
 *   i32 two, i32 nd, u8 typekind, i32 itemsize, i32 flags, u64 data
 *   i64 shape[nd], i64 strides[nd]           when 0 < nd <= IC_MAX_NDIM
 *   u8  wild     bit 0 the struct, bit 1 shape, bit 2 strides are the wild addresses below;
 *                bit 3 data points into the readable region (data modulo its size)
 *   u64 wild struct, u64 wild shape, u64 wild strides
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "fuzz_common.h"
#include "ic_array_struct.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_PYTHON_HARNESS()

/* Never dereferenced by the validator: the first page is never mapped. */
#define FUZZ_DESCR ((PyObject *)(uintptr_t)0x10)

enum { SLOT_STRUCT, SLOT_SHAPE, SLOT_STRIDES };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader in;
    fuzz_reader_init(&in, data, size);
    uint8_t control = fuzz_u8(&in);

    struct ic_pyarrayinterface fields;
    memset(&fields, 0, sizeof(fields));
    fields.two = (int)fuzz_u32(&in);
    fields.nd = (int)fuzz_u32(&in);
    fields.typekind = (char)fuzz_u8(&in);
    fields.itemsize = (int)fuzz_u32(&in);
    fields.flags = (int)fuzz_u32(&in);
    fields.data = (void *)(uintptr_t)fuzz_u64(&in);
    size_t entries = fields.nd > 0 && fields.nd <= IC_MAX_NDIM ? (size_t)fields.nd : 0;
    _Static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "Py_ssize_t is 64 bits");
    Py_ssize_t *shape = fuzz_tail(SLOT_SHAPE, entries * sizeof(Py_ssize_t));
    Py_ssize_t *strides = fuzz_tail(SLOT_STRIDES, entries * sizeof(Py_ssize_t));
    for (size_t i = 0; i < entries; i++)
        shape[i] = (Py_ssize_t)fuzz_u64(&in);
    for (size_t i = 0; i < entries; i++)
        strides[i] = (Py_ssize_t)fuzz_u64(&in);
    fields.shape = (control & 0x04) ? NULL : shape;
    fields.strides = (control & 0x08) ? NULL : strides;
    fields.descr = (control & 0x10) ? FUZZ_DESCR : NULL;
    uint8_t wild = fuzz_u8(&in);
    uint64_t wild_struct = fuzz_u64(&in), wild_shape = fuzz_u64(&in), wild_strides = fuzz_u64(&in);
    if (wild & 0x02)
        fields.shape = (Py_ssize_t *)(uintptr_t)wild_shape;
    if (wild & 0x04)
        fields.strides = (Py_ssize_t *)(uintptr_t)wild_strides;
    if (wild & 0x08)
        fields.data = fuzz_region() + (uintptr_t)fields.data % FUZZ_REGION_SIZE;
    if (control & 0x20)
        fields.data = NULL;
    if (fuzz_in_asan_shadow((uintptr_t)fields.data))
        return 0;

    struct ic_pyarrayinterface *inter = fuzz_tail(SLOT_STRUCT, sizeof(*inter));
    memcpy(inter, &fields, sizeof(fields));
    void *pointer = (wild & 0x01) ? (void *)(uintptr_t)wild_struct : inter;
    int kind = control & 0x03;
    /* PyCapsule_New refuses a NULL pointer; such a capsule is not what producers can make. */
    PyObject *capsule = kind == 2 || !pointer ? PyLong_FromLong(2)
                        : kind == 1           ? PyCapsule_New(pointer, "array_struct", NULL)
                                              : PyCapsule_New(pointer, NULL, NULL);
    FUZZ_CHECK(capsule != NULL);

    struct fuzz_validation v;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_array_struct_check(capsule, &v.diag, &v.view, &v.have_view) == 0);
    fuzz_validation_check(&v, "ic_array_struct_check");
    /* The validator changes nothing (unlike NumPy, which clears NOTSWAPPED in place). */
    FUZZ_CHECK(memcmp(inter, &fields, sizeof(fields)) == 0);
    if (!(wild & 0x07) && !fields.data)
        fuzz_check_no_faults("fuzz_array_struct", &v.diag);
    if (v.have_view) {
        FUZZ_CHECK(kind != 2 && v.view.ndim == fields.nd && v.view.ndim >= 0 &&
                   v.view.ndim <= IC_MAX_NDIM);
        FUZZ_CHECK(v.view.itemsize == fields.itemsize);
        FUZZ_CHECK(v.view.data == (uintptr_t)fields.data);
        fuzz_check_view_items(&v.view);
    }
    Py_DECREF(capsule);
    return 0;
}
