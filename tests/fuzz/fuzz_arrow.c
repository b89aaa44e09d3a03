/* fuzz_arrow: the Arrow C data interface validators (ic_arrow_check_structs and
 * ic_arrow_check_device_structs, src/protocols/ic_arrow.c) on ArrowSchema / ArrowArray (or
 * ArrowDeviceArray) pairs built from the input.
 *
 * The validator copies both structs, the format string, the buffers array, the validity bitmap
 * and checks the values through the guard (ic_guard.h), so any pointer is a legal input: the
 * harness can hand over wild addresses for each. Good pointers point at blocks that end where
 * an inaccessible page begins (fuzz_tail): the two structs, the format (its bytes and a NUL,
 * or no NUL at all), the two buffer pointers, the bitmap and the values, each as long as the
 * input says. children and dictionary are pointers the validator may compare with NULL but
 * never follow (an unmapped address).
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   u8  control  bit 0 schema NULL; bit 1 array NULL; bit 2 format NULL; bit 3 buffers NULL;
 *                bit 4 bitmap NULL; bit 5 values NULL; bit 6 children set; bit 7 dictionary set
 *   u8  format_len (0-31), then that many format bytes; u8 terminated (bit 0: no NUL)
 *   i64 flags, n_children (schema), length, null_count, offset, n_buffers, n_children (array)
 *   u16 bitmap bytes, u16 values bytes (each at most FUZZ_TAIL_MAX), then the bitmap's bytes
 *   u8  wild     bit 0 schema, 1 array, 2 format, 3 buffers, 4 bitmap, 5 values: the wild
 *                address below instead
 *   u64 wild address
 *   u8  device   bit 0: the array goes out as an ArrowDeviceArray with the fields below
 *   i64 device_id, i32 device_type, u64 sync_event (never followed), u64 reserved[0]
 */
#include <string.h>

#include "fuzz_common.h"
#include "ic_arrow.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

FUZZ_PYTHON_HARNESS()

/* Never dereferenced by the validator: the first page is never mapped. */
#define FUZZ_NEVER_FOLLOWED ((void *)(uintptr_t)0x10)

enum { SLOT_SCHEMA, SLOT_ARRAY, SLOT_FORMAT, SLOT_BUFFERS, SLOT_BITMAP, SLOT_VALUES };

struct fuzz_arrow_input {
    uint8_t control, wild, device;
    uint64_t wild_address;
    struct ArrowDeviceArray device_fields; /* all but .array */
    struct ArrowSchema schema;
    struct ArrowArray array;
    const void *buffers[2];
};

static void fuzz_release_schema(struct ArrowSchema *schema)
{
    schema->release = NULL;
}

static void fuzz_release_array(struct ArrowArray *array)
{
    array->release = NULL;
}

static void *fuzz_pointer(const struct fuzz_arrow_input *in, int bit, void *good)
{
    if (in->control & (1u << bit) && bit <= 5)
        return NULL;
    return (in->wild & (1u << bit)) ? (void *)(uintptr_t)in->wild_address : good;
}

/* The format string: its bytes in a tail block, with a NUL or without one. */
static const char *fuzz_format(struct fuzz_reader *r)
{
    size_t len = fuzz_u8(r) % 32;
    char bytes[32];
    for (size_t i = 0; i < len; i++)
        bytes[i] = (char)fuzz_u8(r);
    bool unterminated = fuzz_u8(r) & 1;
    char *format = fuzz_tail(SLOT_FORMAT, len + !unterminated);
    memcpy(format, bytes, len);
    if (!unterminated)
        format[len] = '\0';
    return format;
}

/* A tail block of `size` bytes (at most FUZZ_TAIL_MAX), filled from the input. */
static void *fuzz_block(struct fuzz_reader *r, int slot, size_t size)
{
    unsigned char *block = fuzz_tail(slot, size);
    for (size_t i = 0; i < size; i++)
        block[i] = fuzz_u8(r);
    return block;
}

static void fuzz_read_input(struct fuzz_reader *r, struct fuzz_arrow_input *in)
{
    memset(in, 0, sizeof(*in));
    in->control = fuzz_u8(r);
    const char *format = fuzz_format(r);
    in->schema.flags = (int64_t)fuzz_u64(r);
    in->schema.n_children = (int64_t)fuzz_u64(r);
    in->array.length = (int64_t)fuzz_u64(r);
    in->array.null_count = (int64_t)fuzz_u64(r);
    in->array.offset = (int64_t)fuzz_u64(r);
    in->array.n_buffers = (int64_t)fuzz_u64(r);
    in->array.n_children = (int64_t)fuzz_u64(r);
    size_t bitmap_size = fuzz_u16(r) % (FUZZ_TAIL_MAX + 1);
    size_t values_size = fuzz_u16(r) % (FUZZ_TAIL_MAX + 1);
    void *bitmap = fuzz_block(r, SLOT_BITMAP, bitmap_size);
    void *values = fuzz_tail(SLOT_VALUES, values_size);
    memset(values, 0x5a, values_size);
    in->wild = fuzz_u8(r);
    in->wild_address = fuzz_u64(r);
    in->device = fuzz_u8(r);
    in->device_fields.device_id = (int64_t)fuzz_u64(r);
    in->device_fields.device_type = (ArrowDeviceType)fuzz_u32(r);
    in->device_fields.sync_event = (void *)(uintptr_t)fuzz_u64(r);
    in->device_fields.reserved[0] = (int64_t)fuzz_u64(r);

    in->schema.format = fuzz_pointer(in, 2, (void *)format);
    in->schema.children = (in->control & 0x40) ? FUZZ_NEVER_FOLLOWED : NULL;
    in->schema.dictionary = (in->control & 0x80) ? FUZZ_NEVER_FOLLOWED : NULL;
    in->schema.release = fuzz_release_schema;
    in->array.children = (in->control & 0x40) ? FUZZ_NEVER_FOLLOWED : NULL;
    in->array.dictionary = (in->control & 0x80) ? FUZZ_NEVER_FOLLOWED : NULL;
    in->array.release = fuzz_release_array;
    in->buffers[0] = fuzz_pointer(in, 4, bitmap);
    in->buffers[1] = fuzz_pointer(in, 5, values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_reader r;
    struct fuzz_arrow_input in;
    fuzz_reader_init(&r, data, size);
    fuzz_read_input(&r, &in);
    if (fuzz_in_asan_shadow((uint64_t)(uintptr_t)in.buffers[1]) ||
        fuzz_in_asan_shadow((uint64_t)(uintptr_t)in.buffers[0]))
        return 0;

    const void **buffers = fuzz_tail(SLOT_BUFFERS, sizeof(in.buffers));
    memcpy(buffers, in.buffers, sizeof(in.buffers));
    in.array.buffers = fuzz_pointer(&in, 3, buffers);
    bool device = in.device & 1;
    bool nulls_expected = in.device & 2; /* the nulls variants: the view carries the bitmap */
    struct ArrowSchema *schema = fuzz_tail(SLOT_SCHEMA, sizeof(*schema));
    struct ArrowDeviceArray *device_array =
        fuzz_tail(SLOT_ARRAY, device ? sizeof(struct ArrowDeviceArray) : sizeof(struct ArrowArray));
    struct ArrowArray *array = &device_array->array; /* the device array's first member */
    *schema = in.schema;
    if (device) {
        *device_array = in.device_fields;
        device_array->array = in.array;
    } else {
        *array = in.array;
    }

    struct fuzz_validation v;
    struct ic_arrow_export ex;
    char detail[160];
    fuzz_validation_start(&v);
    FUZZ_CHECK((device ? ic_arrow_check_device_structs : ic_arrow_check_structs)(
                   fuzz_pointer(&in, 0, schema), fuzz_pointer(&in, 1, array), nulls_expected,
                   &v.diag, &ex, &v.view, &v.have_view, detail, sizeof(detail)) == 0);
    /* A view's bitmap is the export's, at the array's offset: never one it did not give. */
    FUZZ_CHECK(!v.have_view || v.view.validity_kind != IC_VALIDITY_BITMAP ||
               (v.view.validity == (uintptr_t)in.buffers[0] &&
                v.view.validity_bit == in.array.offset));
    fuzz_validation_check(&v, "ic_arrow_check_structs");
    /* Only a CPU device array is viewed: other devices' buffers are not the CPU's to read. */
    FUZZ_CHECK(!v.have_view || !device || in.device_fields.device_type == ARROW_DEVICE_CPU);
    FUZZ_CHECK(memchr(detail, '\0', sizeof(detail)) != NULL);
    /* The validator changes nothing it was handed. */
    FUZZ_CHECK(memcmp(schema, &in.schema, sizeof(in.schema)) == 0);
    FUZZ_CHECK(memcmp(array, &in.array, sizeof(in.array)) == 0);
    if (v.have_view) {
        FUZZ_CHECK(v.diag.errors == 0 && v.view.ndim == 1 && v.view.shape[0] == in.array.length);
        FUZZ_CHECK(in.array.length == 0 ||
                   v.view.data ==
                       (uintptr_t)in.buffers[1] + (uintptr_t)(in.array.offset * v.view.itemsize));
        fuzz_check_view_items(&v.view);
    }
    return 0;
}
