#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_arrow.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_export.h"
#include "ic_guard.h"
#include "ic_proxy.h"
#include "ic_python.h"
#include "ic_watch.h"

/* ---------------------------------------------------------------------------------------
 * The validator (protocols.md §6.2, rules 6.5.1-6.5.5)
 */

/* The most bytes of a validity bitmap read to count its nulls (a million elements). */
#define IC_ARROW_BITMAP_MAX ((int64_t)1 << 17)

#define IC_ARROW_KNOWN_FLAGS                                                                       \
    (ARROW_FLAG_DICTIONARY_ORDERED | ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED)

/* The dtype whose Arrow format (the dtype table's column) is `format`; INVALID for any other
 * type ("b" is Arrow's bit-packed boolean). */
enum ic_dtype ic_arrow_format_dtype(const char *format)
{
    for (int d = IC_DTYPE_FIRST; d < IC_DTYPE_END; d++) {
        const char *spelled = ic_dtype_info((enum ic_dtype)d)->arrow;
        if (spelled && strcmp(format, spelled) == 0)
            return (enum ic_dtype)d;
    }
    return IC_DTYPE_INVALID;
}

/* Both structs, copied through the guard; each must not be released yet (rule 6.5.2). */
static bool ic_arrow_read_structs(const void *schema_addr, const void *array_addr,
                                  struct ic_arrow_export *ex, struct ic_diag *diag)
{
    if (!schema_addr || !array_addr) {
        ic_diag_error(diag, IC_RULE_ARROW_STRUCTS, "the %s capsule holds a NULL pointer",
                      schema_addr ? "array" : "schema");
        return false;
    }
    if (ic_guard_copy(&ex->schema, (uintptr_t)schema_addr, sizeof(ex->schema)) < 0 ||
        ic_guard_copy(&ex->array, (uintptr_t)array_addr, sizeof(ex->array)) < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_STRUCTS,
                      "the ArrowSchema at %p or the ArrowArray at %p cannot be read", schema_addr,
                      array_addr);
        return false;
    }
    ex->structs_read = true;
    if (!ex->schema.release || !ex->array.release) {
        ic_diag_error(diag, IC_RULE_ARROW_STRUCTS,
                      "the %s is released already (its release callback is NULL): a fresh "
                      "export is not",
                      ex->schema.release ? "ArrowArray" : "ArrowSchema");
        return false;
    }
    return true;
}

/* The schema of a plain primitive array (rule 6.5.4): a readable format, no children, no
 * dictionary, only the defined flags. Sets *ret_dtype (INVALID for a valid type that is not
 * one of the matrix's). */
static bool ic_arrow_check_schema(struct ic_arrow_export *ex, struct ic_diag *diag,
                                  enum ic_dtype *ret_dtype)
{
    const struct ArrowSchema *s = &ex->schema;
    int rc = s->format ? ic_guard_string((uintptr_t)s->format, ex->format, sizeof(ex->format))
                       : IC_EFAULT;
    if (rc == IC_EFAULT || (rc == 0 && ex->format[0] == '\0')) {
        ic_diag_error(diag, IC_RULE_ARROW_SCHEMA, "the schema's format %s",
                      s->format ? "cannot be read, or is empty" : "is NULL");
        return false;
    }
    if (s->flags & ~(int64_t)IC_ARROW_KNOWN_FLAGS)
        ic_diag_warn(diag, IC_RULE_ARROW_SCHEMA, "the schema's flags 0x%llx set undefined bits",
                     (unsigned long long)s->flags);
    if (s->n_children < 0 || (s->n_children > 0 && !s->children)) {
        ic_diag_error(diag, IC_RULE_ARROW_SCHEMA,
                      "the schema has n_children %lld with children at %p",
                      (long long)s->n_children, (void *)s->children);
        return false;
    }
    *ret_dtype = rc == 0 ? ic_arrow_format_dtype(ex->format) : IC_DTYPE_INVALID;
    if (*ret_dtype == IC_DTYPE_INVALID || s->dictionary) {
        ic_diag_error(diag, IC_RULE_EXCHANGE_DTYPE,
                      "the export's type is %s\"%s\"%s, not a fixed-width primitive array of "
                      "the producer's dtype",
                      s->dictionary ? "a dictionary with indices " : "", ex->format,
                      rc == IC_ERANGE ? "..." : "");
        return false;
    }
    if (s->n_children != 0) {
        ic_diag_error(diag, IC_RULE_ARROW_SCHEMA,
                      "format \"%s\" is primitive, yet the schema has %lld children", ex->format,
                      (long long)s->n_children);
        return false;
    }
    return true;
}

/* The array's counts against a primitive layout (rule 6.5.5): two buffers, no children. */
static bool ic_arrow_check_array(const struct ic_arrow_export *ex, struct ic_diag *diag)
{
    const struct ArrowArray *a = &ex->array;
    int64_t end;
    if (a->length < 0 || a->offset < 0 || a->null_count < -1 || a->null_count > a->length ||
        __builtin_add_overflow(a->offset, a->length, &end)) {
        ic_diag_error(diag, IC_RULE_ARROW_ARRAY,
                      "length %lld, offset %lld, null_count %lld: length and offset are >= 0 "
                      "with a sum that fits in int64, and null_count is -1 (unknown) or "
                      "0..length",
                      (long long)a->length, (long long)a->offset, (long long)a->null_count);
        return false;
    }
    if (a->n_buffers != 2 || a->n_children != ex->schema.n_children || a->dictionary) {
        ic_diag_error(diag, IC_RULE_ARROW_ARRAY,
                      "n_buffers %lld, n_children %lld, dictionary %p: format \"%s\" has two "
                      "buffers (validity, values), no children and no dictionary",
                      (long long)a->n_buffers, (long long)a->n_children, (void *)a->dictionary,
                      ex->format);
        return false;
    }
    return true;
}

/* Counts the zero (null) bits of [offset, offset + length) in the bitmap at `bitmap`. */
static int ic_arrow_count_nulls(const void *bitmap, int64_t offset, int64_t length,
                                int64_t *ret_nulls)
{
    int64_t end = offset + length, first_byte = offset / 8, bytes = (end + 7) / 8 - first_byte;
    if (bytes > IC_ARROW_BITMAP_MAX)
        return IC_ERANGE;
    unsigned char *copy = malloc((size_t)bytes + 1);
    if (!copy)
        return IC_ENOMEM;
    int rc = ic_guard_copy(copy, (uintptr_t)bitmap + (uintptr_t)first_byte, (size_t)bytes);
    int64_t nulls = 0;
    for (int64_t i = offset; rc == 0 && i < end; i++)
        nulls += !((copy[i / 8 - first_byte] >> (i % 8)) & 1);
    free(copy);
    *ret_nulls = nulls;
    return rc;
}

/* The validity bitmap against null_count, and, unless the case built nulls into the array
 * (`nulls_expected`: the judge then checks which elements they are), against the array, which
 * has none. */
static bool ic_arrow_check_validity(const struct ic_arrow_export *ex, bool nulls_expected,
                                    struct ic_diag *diag)
{
    const struct ArrowArray *a = &ex->array;
    if (!ex->buffers[0]) {
        if (a->null_count > 0)
            ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                          "null_count is %lld but there is no validity bitmap",
                          (long long)a->null_count);
        return a->null_count <= 0;
    }
    int64_t nulls = 0;
    int rc = ic_arrow_count_nulls(ex->buffers[0], a->offset, a->length, &nulls);
    if (rc == IC_ERANGE || rc == IC_ENOMEM) {
        ic_diag_warn(diag, IC_RULE_ARROW_BUFFERS, "the validity bitmap is too large to check");
        return true;
    }
    if (rc < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                      "the validity bitmap at %p does not cover offset + length = %lld bits of "
                      "readable memory",
                      ex->buffers[0], (long long)(a->offset + a->length));
        return false;
    }
    if (a->null_count >= 0 && nulls != a->null_count) {
        ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                      "null_count is %lld but the validity bitmap marks %lld elements null",
                      (long long)a->null_count, (long long)nulls);
        return false;
    }
    if (nulls > 0 && !nulls_expected) {
        ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                      "%lld of %lld elements are exported as null, but the array has no nulls",
                      (long long)nulls, (long long)a->length);
        return false;
    }
    return true;
}

/* The values buffer of a fixed-width array: readable for offset + length elements; then the
 * view of the elements [offset, offset + length). */
static bool ic_arrow_view_values(const struct ic_arrow_export *ex, enum ic_dtype dtype,
                                 struct ic_diag *diag, struct ic_view *view)
{
    const struct ArrowArray *a = &ex->array;
    int64_t itemsize = ic_dtype_info(dtype)->itemsize, end = a->offset + a->length, bytes;
    uintptr_t values = (uintptr_t)ex->buffers[1], bad = 0;
    /* offset + length fits (ic_arrow_check_array); its bytes may not */
    if (__builtin_mul_overflow(end, itemsize, &bytes) || (uint64_t)bytes > UINTPTR_MAX - values) {
        ic_diag_error(diag, IC_RULE_ARROW_ARRAY, "offset %lld + length %lld overflows",
                      (long long)a->offset, (long long)a->length);
        return false;
    }
    if (a->length > 0 && (!values || ic_guard_span(values, (size_t)bytes, &bad) < 0)) {
        ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                      "the values buffer at 0x%llx does not hold offset + length = %lld "
                      "elements of readable memory (the first unreadable page: 0x%llx)",
                      (unsigned long long)values, (long long)end, (unsigned long long)bad);
        return false;
    }
    memset(view, 0, sizeof(*view));
    view->data = a->length > 0 ? values + (uintptr_t)(a->offset * itemsize) : 0;
    view->device_type = IC_DEVICE_CPU;
    view->dtype = dtype;
    view->itemsize = (int)itemsize;
    view->ndim = 1;
    view->shape[0] = a->length;
    view->strides[0] = itemsize;
    /* Arrow data is immutable by convention, and no field says more of it. */
    view->readonly = true;
    view->readonly_known = false;
    return true;
}

/* The validity bitmap as the view's: element i valid by bit offset + i (Arrow's offset applies
 * to the bitmap too); no bitmap, no nulls. */
static void ic_arrow_view_validity(const struct ic_arrow_export *ex, struct ic_view *view)
{
    view->validity_kind = ex->buffers[0] ? IC_VALIDITY_BITMAP : IC_VALIDITY_NONE;
    view->validity = (uintptr_t)ex->buffers[0];
    view->validity_bit = ex->array.offset;
}

int ic_arrow_check_structs(const void *schema_addr, const void *array_addr, bool nulls_expected,
                           struct ic_diag *diag, struct ic_arrow_export *ret,
                           struct ic_view *ret_view, bool *ret_have_view, char *detail,
                           size_t detail_size)
{
    enum ic_dtype dtype = IC_DTYPE_INVALID;
    if (!diag || !ret || !ret_view || !ret_have_view || !detail || detail_size == 0)
        return IC_EINVAL;
    memset(ret, 0, sizeof(*ret));
    *ret_have_view = false;
    snprintf(detail, detail_size, "arrow (unreadable)");
    if (!ic_arrow_read_structs(schema_addr, array_addr, ret, diag) ||
        !ic_arrow_check_schema(ret, diag, &dtype) || !ic_arrow_check_array(ret, diag))
        return 0;
    snprintf(detail, detail_size, "arrow format \"%s\" length %lld offset %lld null_count %lld",
             ret->format, (long long)ret->array.length, (long long)ret->array.offset,
             (long long)ret->array.null_count);
    if (!ret->array.buffers ||
        ic_guard_copy(ret->buffers, (uintptr_t)ret->array.buffers, sizeof(ret->buffers)) < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_BUFFERS, "the buffers array at %p cannot be read",
                      (void *)ret->array.buffers);
        return 0;
    }
    if (!ic_arrow_check_validity(ret, nulls_expected, diag))
        return 0;
    if (dtype == IC_DTYPE_BOOL) {
        /* Bit-packed: no byte per element to view in place; ic_arrow_unpack_bools makes them
         * bytes once the bitmap is known to be readable. */
        int64_t end = ret->array.offset + ret->array.length;
        uintptr_t bits = (uintptr_t)ret->buffers[1], bad = 0;
        if (ret->array.length > 0 &&
            (!bits || ic_guard_span(bits, (size_t)((end + 7) / 8), &bad) < 0)) {
            ic_diag_error(diag, IC_RULE_ARROW_BUFFERS,
                          "the values bitmap at 0x%llx does not hold offset + length = %lld bits "
                          "of readable memory",
                          (unsigned long long)bits, (long long)end);
            return 0;
        }
        ret->bools = true;
        return 0;
    }
    *ret_have_view = ic_arrow_view_values(ret, dtype, diag, ret_view);
    if (*ret_have_view)
        ic_arrow_view_validity(ret, ret_view);
    return 0;
}

int ic_arrow_unpack_bools(const struct ic_arrow_export *ex, unsigned char *out)
{
    if (!ex || !ex->bools || (!out && ex->array.length > 0))
        return IC_EINVAL;
    unsigned char byte = 0;
    for (int64_t i = 0; i < ex->array.length; i++) {
        int64_t bit = ex->array.offset + i;
        /* each byte of the bitmap read once, as its first bit comes */
        if ((i == 0 || bit % 8 == 0) &&
            ic_guard_copy(&byte, (uintptr_t)ex->buffers[1] + (uintptr_t)(bit / 8), 1) < 0)
            return IC_EFAULT;
        out[i] = (unsigned char)((byte >> (bit % 8)) & 1);
    }
    return 0;
}

void ic_arrow_bool_view(const unsigned char *bytes, int64_t length, struct ic_view *view)
{
    memset(view, 0, sizeof(*view));
    view->data = length > 0 ? (uintptr_t)bytes : 0;
    view->device_type = IC_DEVICE_CPU;
    view->dtype = IC_DTYPE_BOOL;
    view->itemsize = 1;
    view->ndim = 1;
    view->shape[0] = length;
    view->strides[0] = 1;
    view->readonly = true;
    view->host_copy = true; /* the tester's unpacking of the bits: its address says nothing */
}

/* The device types of the C device data interface (protocols.md §6.3). */
static const struct {
    int32_t type;
    const char *name;
} ic_arrow_devices[] = {
    {ARROW_DEVICE_CPU, "CPU"},          {ARROW_DEVICE_CUDA, "CUDA"},
    {ARROW_DEVICE_CUDA_HOST, "CUDA_HOST"}, {ARROW_DEVICE_OPENCL, "OPENCL"},
    {ARROW_DEVICE_VULKAN, "VULKAN"},    {ARROW_DEVICE_METAL, "METAL"},
    {ARROW_DEVICE_VPI, "VPI"},          {ARROW_DEVICE_ROCM, "ROCM"},
    {ARROW_DEVICE_ROCM_HOST, "ROCM_HOST"}, {ARROW_DEVICE_EXT_DEV, "EXT_DEV"},
    {ARROW_DEVICE_CUDA_MANAGED, "CUDA_MANAGED"}, {ARROW_DEVICE_ONEAPI, "ONEAPI"},
    {ARROW_DEVICE_WEBGPU, "WEBGPU"},    {ARROW_DEVICE_HEXAGON, "HEXAGON"},
};

/* The device fields of an ArrowDeviceArray (rule 6.5.6). True for a CPU array, whose buffers
 * are validated and compared here; other devices' buffers are not yet (a warning says so). */
static bool ic_arrow_check_device(const struct ArrowDeviceArray *d, struct ic_diag *diag)
{
    int known = -1;
    for (size_t i = 0; i < sizeof(ic_arrow_devices) / sizeof(ic_arrow_devices[0]); i++) {
        if (ic_arrow_devices[i].type == d->device_type)
            known = (int)i;
    }
    if (known < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_DEVICE, "device_type %d is no ArrowDeviceType",
                      (int)d->device_type);
        return false;
    }
    /* Arrow's own CPU device says -1: the id means nothing on the CPU. */
    if (d->device_type != ARROW_DEVICE_CPU && d->device_id < 0)
        ic_diag_error(diag, IC_RULE_ARROW_DEVICE, "device_id %lld on a %s device",
                      (long long)d->device_id, ic_arrow_devices[known].name);
    /* A warning, not a failure: a producer that leaves them uninitialised shows it only when
     * malloc hands it dirty memory (pyarrow 26: 2 exports in 2000), so a failure would come
     * and go from run to run. */
    for (size_t i = 0; i < sizeof(d->reserved) / sizeof(d->reserved[0]); i++) {
        if (d->reserved[i] != 0) {
            ic_diag_warn(diag, IC_RULE_ARROW_DEVICE,
                         "reserved[%zu] is 0x%llx, not zero (left uninitialised?)", i,
                         (unsigned long long)d->reserved[i]);
            break;
        }
    }
    if (d->sync_event && d->device_type == ARROW_DEVICE_CPU)
        ic_diag_warn(diag, IC_RULE_ARROW_DEVICE,
                     "a CPU array with a sync_event (%p): the CPU has no event type to wait on",
                     d->sync_event);
    if (d->device_type != ARROW_DEVICE_CPU)
        ic_diag_warn(diag, IC_RULE_ARROW_DEVICE,
                     "a %s device array: its device fields are checked, its buffers are not "
                     "compared yet",
                     ic_arrow_devices[known].name);
    return d->device_type == ARROW_DEVICE_CPU;
}

int ic_arrow_check_device_structs(const void *schema_addr, const void *device_addr,
                                  bool nulls_expected, struct ic_diag *diag,
                                  struct ic_arrow_export *ret, struct ic_view *ret_view,
                                  bool *ret_have_view, char *detail, size_t detail_size)
{
    struct ArrowDeviceArray device;
    if (!diag || !ret || !ret_view || !ret_have_view || !detail || detail_size == 0)
        return IC_EINVAL;
    memset(ret, 0, sizeof(*ret));
    *ret_have_view = false;
    snprintf(detail, detail_size, "arrow device array (unreadable)");
    if (!device_addr || ic_guard_copy(&device, (uintptr_t)device_addr, sizeof(device)) < 0) {
        ic_diag_error(diag, IC_RULE_ARROW_STRUCTS, "the ArrowDeviceArray at %p cannot be read",
                      device_addr);
        return 0;
    }
    if (!ic_arrow_check_device(&device, diag)) {
        snprintf(detail, detail_size, "arrow device array on device type %d",
                 (int)device.device_type);
        return 0;
    }
    /* The ArrowArray is the device array's first member; a CPU array's view is a host view. */
    return ic_arrow_check_structs(schema_addr, device_addr, nulls_expected, diag, ret, ret_view,
                                  ret_have_view, detail, detail_size);
}

/* ---------------------------------------------------------------------------------------
 * The release watch
 */

struct ic_arrow_watch_entry {
    struct ic_watch_head head; /* id, calls, released: the case is done with it */
    bool is_schema;
    bool forwarded;
    bool left_set;
    void *private_data;
    void (*schema_release)(struct ArrowSchema *);
    void (*array_release)(struct ArrowArray *);
};

static struct ic_watch_table ic_arrow_releases = IC_WATCH_TABLE_INIT(struct ic_arrow_watch_entry);

/* Callers hold the lock. */
static struct ic_arrow_watch_entry *ic_arrow_entry(int id)
{
    return ic_watch_by_id(&ic_arrow_releases, id);
}

/* The counting callback's work for the struct whose private_data (the entry's id) is at
 * `private_data`. Returns the producer's callback to forward to, with private_data restored,
 * or NULL when this call is not forwarded. */
static void *ic_arrow_release_called(bool is_schema, void **private_data)
{
    void *forward = NULL;
    int id = (int)(uintptr_t)*private_data;
    ic_watch_lock(&ic_arrow_releases);
    struct ic_arrow_watch_entry *entry = ic_arrow_entry(id);
    if (!entry || entry->is_schema != is_schema) {
        ic_watch_note_unmatched(&ic_arrow_releases);
    } else if (++entry->head.calls == 1) {
        forward = is_schema ? (void *)entry->schema_release : (void *)entry->array_release;
        entry->forwarded = forward != NULL;
        *private_data = entry->private_data;
    }
    ic_watch_unlock(&ic_arrow_releases);
    return forward;
}

/* After the producer's release returned: it must have marked the struct released. */
static void ic_arrow_release_done(int id, bool left_set)
{
    ic_watch_lock(&ic_arrow_releases);
    struct ic_arrow_watch_entry *entry = ic_arrow_entry(id);
    if (entry) {
        entry->left_set = left_set;
        if (entry->head.released)
            ic_watch_retire(&ic_arrow_releases, entry);
    }
    ic_watch_unlock(&ic_arrow_releases);
}

/* The counting callbacks of both structs: forward the first call to the producer's release,
 * with its own release and private_data back in the struct it is given. */
static void ic_arrow_counting_schema_release(struct ArrowSchema *schema)
{
    int id = (int)(uintptr_t)schema->private_data;
    schema->release = (void (*)(struct ArrowSchema *))ic_arrow_release_called(
        true, &schema->private_data);
    if (schema->release) {
        schema->release(schema);
        ic_arrow_release_done(id, schema->release != NULL);
    }
}

static void ic_arrow_counting_array_release(struct ArrowArray *array)
{
    int id = (int)(uintptr_t)array->private_data;
    array->release =
        (void (*)(struct ArrowArray *))ic_arrow_release_called(false, &array->private_data);
    if (array->release) {
        array->release(array);
        ic_arrow_release_done(id, array->release != NULL);
    }
}

int ic_arrow_watch(void *addr, bool is_schema, int *ret_id)
{
    /* The two fields are the struct's last ones in both structs: release, then private_data. */
    size_t release_at = is_schema ? offsetof(struct ArrowSchema, release)
                                  : offsetof(struct ArrowArray, release);
    size_t private_at = is_schema ? offsetof(struct ArrowSchema, private_data)
                                  : offsetof(struct ArrowArray, private_data);
    void *ours = is_schema ? (void *)ic_arrow_counting_schema_release
                           : (void *)ic_arrow_counting_array_release;
    void *release = NULL, *private_data = NULL;
    int rc;

    if (!addr || !ret_id)
        return IC_EINVAL;
    ic_watch_lock(&ic_arrow_releases);
    rc = ic_guard_copy(&release, (uintptr_t)addr + release_at, sizeof(release));
    if (rc == 0)
        rc = ic_guard_copy(&private_data, (uintptr_t)addr + private_at, sizeof(private_data));
    if (rc == 0 && !release)
        rc = IC_EINVAL;
    if (rc == 0 && release == ours) {
        struct ic_arrow_watch_entry *known = ic_arrow_entry((int)(uintptr_t)private_data);
        rc = known ? 0 : IC_ENOTFOUND;
        if (known)
            *ret_id = known->head.id;
        goto unlock;
    }
    struct ic_arrow_watch_entry *slot = rc == 0 ? ic_watch_add(&ic_arrow_releases) : NULL;
    if (rc == 0 && !slot)
        rc = IC_ENOMEM;
    if (rc < 0)
        goto unlock;
    slot->is_schema = is_schema;
    slot->private_data = private_data;
    if (is_schema)
        slot->schema_release = (void (*)(struct ArrowSchema *))release;
    else
        slot->array_release = (void (*)(struct ArrowArray *))release;
    void *cookie = (void *)(uintptr_t)slot->head.id;
    /* private_data first: a struct whose release is ours always carries our id. */
    rc = ic_guard_store((uintptr_t)addr + private_at, &cookie, sizeof(cookie));
    if (rc == 0)
        rc = ic_guard_store((uintptr_t)addr + release_at, &ours, sizeof(ours));
    if (rc < 0) {
        ic_guard_store((uintptr_t)addr + private_at, &private_data, sizeof(private_data));
        ic_watch_retire(&ic_arrow_releases, slot);
        goto unlock;
    }
    *ret_id = slot->head.id;

unlock:
    ic_watch_unlock(&ic_arrow_releases);
    return rc;
}

int ic_arrow_watch_state(int id, struct ic_arrow_watch_state *ret)
{
    struct ic_arrow_watch_entry entry;
    int rc = ic_watch_copy(&ic_arrow_releases, id, &entry);
    if (rc == 0)
        *ret = (struct ic_arrow_watch_state){
            .calls = entry.head.calls, .forwarded = entry.forwarded, .left_set = entry.left_set};
    return rc;
}

void ic_arrow_watch_release(int id)
{
    ic_watch_done(&ic_arrow_releases, id);
}

int ic_arrow_watch_unmatched(void)
{
    return ic_watch_unmatched(&ic_arrow_releases);
}

/* ---------------------------------------------------------------------------------------
 * One export: the (schema, array) tuple, checked and watched
 */

/* The struct a capsule named `name` holds, or NULL with a finding (rule 6.5.1). */
static void *ic_arrow_capsule_pointer(PyObject *capsule, const char *name, struct ic_diag *diag)
{
    if (!PyCapsule_CheckExact(capsule)) {
        ic_diag_error(diag, IC_RULE_ARROW_CAPSULES, "the %s is a %s, not a PyCapsule", name,
                      Py_TYPE(capsule)->tp_name);
        return NULL;
    }
    const char *actual = PyCapsule_GetName(capsule);
    if (!actual || strcmp(actual, name) != 0) {
        PyErr_Clear();
        ic_diag_error(diag, IC_RULE_ARROW_CAPSULES, "a capsule is named %s%s%s where \"%s\" is due",
                      actual ? "\"" : "", actual ? actual : "NULL", actual ? "\"" : "", name);
        return NULL;
    }
    void *pointer = PyCapsule_GetPointer(capsule, name);
    if (!pointer)
        PyErr_Clear();
    return pointer;
}

/* Watches the release callback of one struct of the export and lists its id in the record. */
static void ic_arrow_watch_one(void *addr, bool is_schema, struct ic_export_record *rec,
                               struct ic_diag *diag)
{
    int capacity = (int)(sizeof(rec->watch) / sizeof(rec->watch[0]));
    int id = -1;
    int rc = ic_arrow_watch(addr, is_schema, &id);
    if (rc < 0) {
        ic_diag_warn(diag, IC_RULE_ARROW_RELEASE,
                     "the %s's release callback could not be instrumented (%s): its calls are "
                     "not counted",
                     is_schema ? "ArrowSchema" : "ArrowArray", ic_strerror(rc));
        return;
    }
    for (int i = 0; i < rec->watch_count; i++) {
        if (rec->watch[i] == id)
            return;
    }
    if (rec->watch_count < capacity) {
        rec->watch[rec->watch_count++] = id;
        return;
    }
    ic_diag_warn(diag, IC_RULE_ARROW_RELEASE,
                 "more exports in one case than the tester follows: this release callback is "
                 "instrumented but not checked");
    ic_arrow_watch_release(id);
}

/* The two protocols of this module: the same pair of capsules, the array one holding an
 * ArrowArray or an ArrowDeviceArray (whose first member is the ArrowArray). */
struct ic_arrow_flavour {
    const char *method;        /* __arrow_c_array__ */
    const char *array_capsule; /* arrow_array */
    size_t array_size;         /* bytes a consumer moves out of the array capsule */
    bool device;
};

static const struct ic_arrow_flavour ic_arrow_plain = {
    "__arrow_c_array__", IC_ARROW_ARRAY_CAPSULE, sizeof(struct ArrowArray), false};
static const struct ic_arrow_flavour ic_arrow_device = {"__arrow_c_device_array__",
                                                        IC_ARROW_DEVICE_ARRAY_CAPSULE,
                                                        sizeof(struct ArrowDeviceArray), true};

/* A boolean export's elements, unpacked into a bytes object the record keeps, as the
 * reading's view (the first export's only: the record keeps the first view). */
static void ic_arrow_keep_bools(const struct ic_arrow_export *ex, struct ic_export_record *rec,
                                struct ic_export_reading *r)
{
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ex->array.length);
    if (!bytes) {
        PyErr_Clear();
        return;
    }
    if (ic_arrow_unpack_bools(ex, (unsigned char *)PyBytes_AS_STRING(bytes)) < 0) {
        Py_DECREF(bytes);
        return;
    }
    ic_arrow_bool_view((const unsigned char *)PyBytes_AS_STRING(bytes), ex->array.length,
                       &r->view);
    ic_arrow_view_validity(ex, &r->view);
    r->have_view = true;
    rec->owned = bytes;
}

/* Checks the result of the flavour's method, records it, and watches its release callbacks.
 * *ret_unreadable: the export points at memory that cannot be read. */
static void ic_arrow_after_export(const struct ic_arrow_flavour *f, PyObject *result,
                                  struct ic_export_record *rec, struct ic_arrow_export *ret,
                                  bool *ret_unreadable)
{
    struct ic_export_reading r;
    ic_export_reading_init(&r);
    memset(ret, 0, sizeof(*ret));
    *ret_unreadable = false;
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2) {
        ic_diag_error(&r.diag, IC_RULE_ARROW_CAPSULES,
                      "%s returned a %s, not a (schema, array) tuple of two capsules", f->method,
                      Py_TYPE(result)->tp_name);
        snprintf(r.detail, sizeof(r.detail), "%s -> %s", f->method, Py_TYPE(result)->tp_name);
        ic_export_keep(rec, &r);
        return;
    }
    void *schema =
        ic_arrow_capsule_pointer(PyTuple_GET_ITEM(result, 0), IC_ARROW_SCHEMA_CAPSULE, &r.diag);
    void *array = ic_arrow_capsule_pointer(PyTuple_GET_ITEM(result, 1), f->array_capsule, &r.diag);
    if (schema && array) {
        (f->device ? ic_arrow_check_device_structs : ic_arrow_check_structs)(
            schema, array, ic_variant_has_nulls(rec->variant), &r.diag, ret, &r.view, &r.have_view,
            r.detail, sizeof(r.detail));
        if (ret->bools && !rec->owned)
            ic_arrow_keep_bools(ret, rec, &r);
        *ret_unreadable = ic_export_diag_has_error(&r.diag, IC_RULE_ARROW_STRUCTS) ||
                          ic_export_diag_has_error(&r.diag, IC_RULE_ARROW_BUFFERS);
        if (ret->structs_read && ret->schema.release && ret->array.release) {
            ic_arrow_watch_one(schema, true, rec, &r.diag);
            ic_arrow_watch_one(array, false, rec, &r.diag);
        }
    } else {
        snprintf(r.detail, sizeof(r.detail), "%s -> unusable capsules", f->method);
    }
    ic_export_keep(rec, &r);
    /* The C data interface points at the producer's buffers, but nothing in it promises that
     * they are the array's own: a copy is the producer's choice. */
    rec->zero_copy_known = false;
}

/* ---------------------------------------------------------------------------------------
 * The proxy
 */

static PyObject *ic_arrow_proxy_call(const struct ic_arrow_flavour *f, PyObject *self,
                                     PyObject *args, PyObject *kwargs)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    PyObject *result = ic_export_forward_call(proxy, f->method, args, kwargs);
    if (!result)
        return NULL; /* the producer's exception goes on to the consumer unchanged */
    bool withheld = false;
    if (rec) {
        struct ic_arrow_export ex;
        ic_arrow_after_export(f, result, rec, &ex, &withheld);
    }
    /* Kept until finish(), so that the destructors of capsules nobody took run before the
     * release counts are read. */
    Py_XSETREF(proxy->last_export, Py_NewRef(result));
    if (withheld) {
        Py_CLEAR(result);
        PyErr_SetString(PyExc_BufferError,
                        "interopcheck withheld this Arrow export from the consumer: it points at "
                        "memory that cannot be read");
    }
    return result;
}

static PyObject *ic_arrow_proxy_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return ic_arrow_proxy_call(&ic_arrow_plain, self, args, kwargs);
}

static PyObject *ic_arrow_proxy_device_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return ic_arrow_proxy_call(&ic_arrow_device, self, args, kwargs);
}

IC_METHOD_PROTOCOL(ic_arrow, "__arrow_c_array__", ic_arrow_proxy_array,
                   "interopcheck.ArrowArrayProxy")
IC_METHOD_PROTOCOL(ic_arrow_dev, "__arrow_c_device_array__", ic_arrow_proxy_device_array,
                   "interopcheck.ArrowDeviceArrayProxy")

/* ---------------------------------------------------------------------------------------
 * observe / finish (rule 6.5.3)
 */

/* Whether the consumer moved the struct out of `capsule`: its release is NULL now. */
static bool ic_arrow_moved(PyObject *capsule, const char *name, bool is_schema)
{
    void *addr = PyCapsule_CheckExact(capsule) ? PyCapsule_GetPointer(capsule, name) : NULL;
    void *release = NULL;
    size_t at =
        is_schema ? offsetof(struct ArrowSchema, release) : offsetof(struct ArrowArray, release);
    if (!addr) {
        PyErr_Clear();
        return false;
    }
    return ic_guard_copy(&release, (uintptr_t)addr + at, sizeof(release)) == 0 && !release;
}

/* The proxy of either protocol, or false. */
static bool ic_arrow_any_proxy(PyObject *obj)
{
    return obj && (ic_arrow_is_proxy(obj) || ic_arrow_dev_is_proxy(obj));
}

static void ic_arrow_observe(PyObject *obj, struct ic_export_record *rec)
{
    if (!rec || !ic_arrow_any_proxy(obj))
        return;
    const char *array_capsule = ic_arrow_is_proxy(obj) ? IC_ARROW_ARRAY_CAPSULE
                                                       : IC_ARROW_DEVICE_ARRAY_CAPSULE;
    PyObject *last = ((struct ic_proxy *)obj)->last_export;
    if (last && PyTuple_Check(last) && PyTuple_GET_SIZE(last) == 2)
        rec->consumed = ic_arrow_moved(PyTuple_GET_ITEM(last, 1), array_capsule, false) ||
                        ic_arrow_moved(PyTuple_GET_ITEM(last, 0), IC_ARROW_SCHEMA_CAPSULE, true);
}

/* The verdict on one watched struct, once everything of the case is released. */
static void ic_arrow_judge_release(int index, bool moved, const struct ic_arrow_watch_state *state,
                                   struct ic_diag *lifetime)
{
    const char *what = index % 2 == 0 ? "ArrowSchema" : "ArrowArray";
    if (state->calls == 0 && moved) {
        ic_diag_add_side(lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_CONSUMER,
                         "the consumer moved the %s out of its capsule but never called its "
                         "release callback: it leaks the producer's data",
                         what);
    } else if (state->calls == 0) {
        ic_diag_add_side(lifetime, IC_SEV_WARNING, IC_RULE_ARROW_RELEASE, IC_SIDE_PRODUCER,
                         "the %s was not moved, yet its release callback was never called: the "
                         "capsule is still alive, or its destructor frees the struct without "
                         "releasing it",
                         what);
    } else if (state->calls > 1) {
        ic_diag_add_side(lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_CONSUMER,
                         "the %s's release callback was called %d times; it must be called "
                         "exactly once (only the first call reached the producer)",
                         what, state->calls);
    } else if (state->forwarded && state->left_set) {
        ic_diag_add_side(lifetime, IC_SEV_ERROR, IC_RULE_ARROW_RELEASE, IC_SIDE_PRODUCER,
                         "the producer's release callback of the %s returned without setting "
                         "release to NULL: the struct still looks alive",
                         what);
    }
}

static void ic_arrow_finish(PyObject *obj, struct ic_export_record *rec)
{
    if (!rec)
        return;
    /* Let go of the last export, so that the destructors of untaken capsules run now and
     * their release calls are counted below. */
    if (ic_arrow_any_proxy(obj))
        Py_CLEAR(((struct ic_proxy *)obj)->last_export);
    for (int i = 0; i < rec->watch_count; i++) {
        struct ic_arrow_watch_state state;
        if (ic_arrow_watch_state(rec->watch[i], &state) < 0)
            continue;
        int before = rec->lifetime.count;
        ic_arrow_judge_release(i, rec->consumed, &state, &rec->lifetime);
        /* Not called yet: a full collection may still call it (a second look comes). */
        if (state.calls == 0 && rec->lifetime.count > before)
            rec->lifetime.items[rec->lifetime.count - 1].provisional = true;
        ic_arrow_watch_release(rec->watch[i]);
    }
    rec->lifetime_checked = true;
}

/* ---------------------------------------------------------------------------------------
 * The reference consumer: moves both structs out, as pyarrow's importer does
 */

struct ic_arrow_import {
    struct ArrowSchema schema;
    struct ArrowDeviceArray device; /* of the plain protocol, only device.array is used */
};

static void ic_arrow_import_release(void *context)
{
    struct ic_arrow_import *import = context;
    if (import->device.array.release)
        import->device.array.release(&import->device.array);
    if (import->schema.release)
        import->schema.release(&import->schema);
    free(import);
}

/* Moves the struct at `addr` (its fields read already, into `moved`): the source's release
 * becomes NULL, so that the capsule's destructor leaves it to us. */
static int ic_arrow_move(void *addr, size_t release_at, void *moved, size_t size)
{
    void *none = NULL;
    int rc = ic_guard_copy(moved, (uintptr_t)addr, size);
    if (rc == 0)
        rc = ic_guard_store((uintptr_t)addr + release_at, &none, sizeof(none));
    return rc;
}

static int ic_arrow_take(const struct ic_arrow_flavour *f, PyObject *result,
                         struct ic_export_record *rec, PyObject **ret_handle)
{
    struct ic_arrow_import *import = calloc(1, sizeof(*import));
    if (!import)
        return IC_ENOMEM;
    void *schema = PyCapsule_GetPointer(PyTuple_GET_ITEM(result, 0), IC_ARROW_SCHEMA_CAPSULE);
    void *array = PyCapsule_GetPointer(PyTuple_GET_ITEM(result, 1), f->array_capsule);
    int rc = schema && array ? 0 : IC_EINVAL;
    PyErr_Clear();
    /* The watch was installed first: the moved copies carry the counting callbacks. */
    if (rc == 0)
        rc = ic_arrow_move(schema, offsetof(struct ArrowSchema, release), &import->schema,
                           sizeof(import->schema));
    if (rc == 0)
        rc = ic_arrow_move(array, offsetof(struct ArrowArray, release), &import->device,
                           f->array_size);
    if (rc < 0) {
        ic_arrow_import_release(import);
        return rc;
    }
    rec->consumed = true;
    *ret_handle = ic_handle_new(import, ic_arrow_import_release);
    return *ret_handle ? 0 : IC_ENOMEM;
}

/* --- requested_schema: interopcheck's consumer asks for the export's own type ------------ */

static void ic_arrow_requested_release(struct ArrowSchema *schema)
{
    free(schema->private_data); /* the format string */
    schema->private_data = NULL;
    schema->release = NULL;
}

static void ic_arrow_requested_destructor(PyObject *capsule)
{
    struct ArrowSchema *schema = PyCapsule_GetPointer(capsule, IC_ARROW_SCHEMA_CAPSULE);
    if (!schema) {
        PyErr_Clear();
        return;
    }
    if (schema->release) /* not moved out by the producer: released here */
        schema->release(schema);
    free(schema);
}

PyObject *ic_arrow_schema_capsule_new(const char *format)
{
    struct ArrowSchema *schema = calloc(1, sizeof(*schema));
    size_t size = strlen(format) + 1;
    char *copy = malloc(size);
    if (!schema || !copy) {
        free(schema);
        free(copy);
        return PyErr_NoMemory();
    }
    memcpy(copy, format, size);
    schema->format = copy;
    schema->name = "";
    schema->flags = ARROW_FLAG_NULLABLE;
    schema->release = ic_arrow_requested_release;
    schema->private_data = copy;
    PyObject *capsule =
        PyCapsule_New(schema, IC_ARROW_SCHEMA_CAPSULE, ic_arrow_requested_destructor);
    if (!capsule) {
        ic_arrow_requested_release(schema);
        free(schema);
    }
    return capsule;
}

int ic_arrow_schema_format(const void *schema_addr, char *format, size_t size)
{
    struct ArrowSchema schema;
    if (!schema_addr || size < 2 ||
        ic_guard_copy(&schema, (uintptr_t)schema_addr, sizeof(schema)) < 0 || !schema.format)
        return IC_EFAULT;
    memset(format, 0, size);
    for (size_t i = 0; i + 1 < size; i++) {
        if (ic_guard_copy(&format[i], (uintptr_t)schema.format + i, 1) < 0)
            return IC_EFAULT;
        if (!format[i])
            break;
    }
    return format[0] ? 0 : IC_EINVAL;
}

/* The schema capsule of the producer's own type, for the requested_schema variant: read from
 * an export made without it (then released), or NULL when there is none to read (the export
 * fails as it will again, and the plain request judges it). */
static PyObject *ic_arrow_own_schema(const char *method, PyObject *export_obj, char *format,
                                     size_t size)
{
    PyObject *first = PyObject_CallMethod(export_obj, method, NULL);
    PyObject *requested = NULL;
    void *schema = first && PyTuple_Check(first) && PyTuple_GET_SIZE(first) == 2 &&
                           PyCapsule_IsValid(PyTuple_GET_ITEM(first, 0), IC_ARROW_SCHEMA_CAPSULE)
                       ? PyCapsule_GetPointer(PyTuple_GET_ITEM(first, 0), IC_ARROW_SCHEMA_CAPSULE)
                       : NULL;
    if (schema && ic_arrow_schema_format(schema, format, size) == 0)
        requested = ic_arrow_schema_capsule_new(format);
    PyErr_Clear();
    Py_XDECREF(first); /* its capsules release what they hold */
    return requested;
}

/* The keywords of the reference consumer's call: an unknown one for the unknown_keyword
 * variant, which the producer must refuse with NotImplementedError (rule 6.5.8); the
 * producer's own schema for requested_schema (`requested`, its format `format`), which it must
 * not refuse (rule 6.5.9). */
static PyObject *ic_arrow_request_kwargs(struct ic_export_record *rec, const char *method,
                                         PyObject *requested, const char *format)
{
    PyObject *kwargs = PyDict_New();
    bool unknown = rec->variant == IC_VARIANT_ARROW_UNKNOWN_KEYWORD;
    if (kwargs && unknown && PyDict_SetItemString(kwargs, "interopcheck_unknown", Py_True) < 0)
        Py_CLEAR(kwargs);
    if (kwargs && requested && PyDict_SetItemString(kwargs, "requested_schema", requested) < 0)
        Py_CLEAR(kwargs);
    if (requested)
        snprintf(rec->request, sizeof(rec->request),
                 "%s(requested_schema=its own schema, format \"%s\")", method, format);
    else
        snprintf(rec->request, sizeof(rec->request), "%s(%s)", method,
                 unknown ? "interopcheck_unknown=True" : "");
    if (unknown) {
        rec->refusal_required = true;
        rec->refusal_rule = IC_RULE_ARROW_DEVICE_KEYWORDS;
    }
    return kwargs;
}

void ic_arrow_requested_refused(struct ic_export_record *rec, const char *format,
                                const struct ic_py_exc *exc)
{
    rec->refusal_required = true; /* judged here: no other verdict on the refusal */
    ic_diag_error(&rec->diag, IC_RULE_ARROW_REQUESTED_SCHEMA,
                  "asked for its own type (format \"%s\") as requested_schema, the producer "
                  "raised %s: %s",
                  format, exc->type, exc->message);
}

static int ic_arrow_consume(const struct ic_arrow_flavour *f, PyObject *export_obj,
                            struct ic_export_record *rec, PyObject **ret_handle)
{
    struct ic_py_exc exc;
    struct ic_arrow_export ex;
    bool unreadable = false;

    *ret_handle = NULL;
    char format[32] = "";
    PyObject *requested = rec->variant == IC_VARIANT_ARROW_REQUESTED_SCHEMA
                              ? ic_arrow_own_schema(f->method, export_obj, format, sizeof(format))
                              : NULL;
    rec->export_calls++;
    PyObject *kwargs = ic_arrow_request_kwargs(rec, f->method, requested, format);
    PyObject *no_args = PyTuple_New(0);
    PyObject *method = kwargs && no_args ? PyObject_GetAttrString(export_obj, f->method) : NULL;
    PyObject *result = method ? PyObject_Call(method, no_args, kwargs) : NULL;
    Py_XDECREF(method);
    Py_XDECREF(no_args);
    Py_XDECREF(kwargs);
    bool asked_own_schema = requested != NULL;
    Py_XDECREF(requested);
    if (!result) {
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        if (rec->refusal_required && strcmp(exc.type, "NotImplementedError") != 0)
            ic_diag_error(&rec->diag, IC_RULE_ARROW_DEVICE_KEYWORDS,
                          "an unknown keyword was refused with %s (%s), not NotImplementedError",
                          exc.type, exc.message);
        if (asked_own_schema)
            ic_arrow_requested_refused(rec, format, &exc);
        return 0; /* a refusal; whether one was allowed is the driver's call */
    }
    ic_arrow_after_export(f, result, rec, &ex, &unreadable);
    int rc = 0;
    if (rec->have_view && !unreadable && !rec->refusal_required)
        rc = ic_arrow_take(f, result, rec, ret_handle);
    /* An export that cannot be taken is released by its capsules' destructors, here. */
    Py_DECREF(result);
    return rc;
}

static int ic_arrow_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                      PyObject **ret_handle)
{
    return ic_arrow_consume(&ic_arrow_plain, export_obj, rec, ret_handle);
}

static int ic_arrow_device_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                             PyObject **ret_handle)
{
    return ic_arrow_consume(&ic_arrow_device, export_obj, rec, ret_handle);
}

/* What both Arrow protocols tell the generic stages, and their lifetime hooks. */
#define IC_ARROW_COMMON_OPS                                                                        \
    .facts = {.readonly_rule = IC_RULE_EXCHANGE_READONLY,                                          \
              .memory_rule = IC_RULE_ARROW_BUFFERS,                                                \
              .nulls_rule = IC_RULE_ARROW_NULLS},                                                  \
    .observe = ic_arrow_observe, .finish = ic_arrow_finish

const struct ic_protocol_ops ic_arrow_ops = {
    .protocol = IC_PROTOCOL_ARROW,
    .proxy_new = ic_arrow_proxy_new,
    .reference_consume = ic_arrow_reference_consume,
    IC_ARROW_COMMON_OPS,
};

const struct ic_protocol_ops ic_arrow_device_ops = {
    .protocol = IC_PROTOCOL_ARROW_DEVICE,
    .proxy_new = ic_arrow_dev_proxy_new,
    .reference_consume = ic_arrow_device_reference_consume,
    IC_ARROW_COMMON_OPS,
};
