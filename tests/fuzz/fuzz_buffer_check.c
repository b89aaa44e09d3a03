/* fuzz_buffer_check: the Py_buffer validator of the buffer protocol (ic_buffer_check,
 * src/protocols/ic_buffer.c) on buffers built from the input, as an exporter could fill them in
 * after a successful get, with the request flags a consumer may pass.
 *
 * The validator copies the format, shape, strides and suboffsets through the guard
 * (ic_guard.h) and checks the addressed bytes at buf readable, so any pointer is a legal
 * input: the harness can also hand over wild addresses. Good pointers point at blocks of
 * exactly what the contract lets the validator read, each ending where an inaccessible page
 * begins (fuzz_tail): the format and its terminating NUL, ndim entries of each array (none
 * when ndim is 0 or out of range). With only good pointers and no buf, a finding of unreadable
 * memory is a broken promise. The GIL is held: compound formats are sized by the struct
 * module.
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   i32 flags (the request), u8 control  bit 0 obj NULL; bit 1 format NULL; bit 2 shape NULL;
 *       bit 3 strides NULL; bit 4 suboffsets NULL; bit 5 buf NULL
 *   i64 len, i64 itemsize, i32 readonly, i32 ndim, u64 buf
 *   u8 format length, then that many bytes of format
 *   i64 shape[ndim], i64 strides[ndim], i64 suboffsets[ndim]   when 0 < ndim <= 64
 *   u8  wild     bit 0 format, bit 1 shape, bit 2 strides, bit 3 suboffsets are the wild
 *                addresses below; bit 4 buf points into the readable region (buf modulo its
 *                size)
 *   u64 wild format, u64 wild shape, u64 wild strides, u64 wild suboffsets
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "fuzz_common.h"
#include "ic_buffer.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_PYTHON_HARNESS()

enum { SLOT_FORMAT, SLOT_SHAPE, SLOT_STRIDES, SLOT_SUBOFFSETS };

static Py_ssize_t *read_array(struct fuzz_reader *in, int slot, size_t entries)
{
    Py_ssize_t *values = fuzz_tail(slot, entries * sizeof(Py_ssize_t));
    for (size_t i = 0; i < entries; i++)
        values[i] = (Py_ssize_t)fuzz_u64(in);
    return values;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader in;
    fuzz_reader_init(&in, data, size);
    int flags = (int)fuzz_u32(&in);
    uint8_t control = fuzz_u8(&in);

    Py_buffer buffer;
    memset(&buffer, 0, sizeof(buffer));
    buffer.len = (Py_ssize_t)fuzz_u64(&in);
    buffer.itemsize = (Py_ssize_t)fuzz_u64(&in);
    buffer.readonly = (int)fuzz_u32(&in);
    buffer.ndim = (int)fuzz_u32(&in);
    uint64_t address = fuzz_u64(&in);
    buffer.buf = (control & 0x20) ? NULL : (void *)(uintptr_t)address;
    buffer.obj = (control & 0x01) ? NULL : Py_None; /* borrowed: nothing here releases it */

    size_t format_len = fuzz_u8(&in);
    char *format = fuzz_tail(SLOT_FORMAT, format_len + 1);
    for (size_t i = 0; i < format_len; i++)
        format[i] = (char)fuzz_u8(&in);
    format[format_len] = '\0';
    buffer.format = (control & 0x02) ? NULL : format;

    size_t entries = buffer.ndim > 0 && buffer.ndim <= IC_MAX_NDIM ? (size_t)buffer.ndim : 0;
    Py_ssize_t *shape = read_array(&in, SLOT_SHAPE, entries);
    Py_ssize_t *strides = read_array(&in, SLOT_STRIDES, entries);
    Py_ssize_t *suboffsets = read_array(&in, SLOT_SUBOFFSETS, entries);
    buffer.shape = (control & 0x04) ? NULL : shape;
    buffer.strides = (control & 0x08) ? NULL : strides;
    buffer.suboffsets = (control & 0x10) ? NULL : suboffsets;

    uint8_t wild = fuzz_u8(&in);
    uint64_t wild_address[4];
    for (int i = 0; i < 4; i++)
        wild_address[i] = fuzz_u64(&in);
    if (wild & 0x01)
        buffer.format = (char *)(uintptr_t)wild_address[0];
    if (wild & 0x02)
        buffer.shape = (Py_ssize_t *)(uintptr_t)wild_address[1];
    if (wild & 0x04)
        buffer.strides = (Py_ssize_t *)(uintptr_t)wild_address[2];
    if (wild & 0x08)
        buffer.suboffsets = (Py_ssize_t *)(uintptr_t)wild_address[3];
    if ((wild & 0x10) && buffer.buf)
        buffer.buf = fuzz_region() + (uintptr_t)buffer.buf % FUZZ_REGION_SIZE;
    if (fuzz_in_asan_shadow((uintptr_t)buffer.buf))
        return 0;

    struct fuzz_validation v;
    fuzz_validation_start(&v);
    FUZZ_CHECK(ic_buffer_check(&buffer, flags, &v.diag, &v.view, &v.have_view) == 0);
    fuzz_validation_check(&v, "ic_buffer_check");
    if (!(wild & 0x0f) && !buffer.buf)
        fuzz_check_no_faults("fuzz_buffer_check", &v.diag);
    if (v.have_view) {
        FUZZ_CHECK(v.view.ndim >= 0 && v.view.ndim <= IC_MAX_NDIM);
        FUZZ_CHECK(v.view.itemsize > 0);
        FUZZ_CHECK(v.view.data == (uintptr_t)buffer.buf);
        fuzz_check_view_items(&v.view);
    }
    char name[128];
    ic_buffer_flags_name(flags, name, sizeof(name));
    FUZZ_CHECK(memchr(name, '\0', sizeof(name)) != NULL);
    return 0;
}
