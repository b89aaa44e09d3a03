/*
 * ic_arrow: the Arrow PyCapsule interface over the C data interface and the C device data
 * interface (protocols.md §6): validation of an ArrowSchema / ArrowArray (or ArrowDeviceArray)
 * pair, the instrumented release callbacks, and the ops of the "arrow" protocol
 * (__arrow_c_array__) and the "arrow_device" protocol (__arrow_c_device_array__), each into a
 * consumer such as pyarrow.array.
 *
 * Contract
 * - The validator reads what a producer exported and writes findings citing the arrow.* rules
 *   (ic_rules.h). Everything the producer points to is read through the guard (ic_guard.h):
 *   the two structs, which are copied the moment they are checked, the format string, the
 *   buffers array, the validity bitmap and the data buffer. Memory that cannot be read is a
 *   finding against the producer (arrow.structs, arrow.buffers), never a fault.
 * - Scope: 1-D arrays of the fixed-width primitive formats that interopcheck's dtypes have
 *   (int8..int64, uint8..uint64, float16/32/64, bool). Nulls are an error unless the case
 *   built them (`nulls_expected`, the nulls variants); the view then carries the validity
 *   bitmap (ic_view's validity fields) and the judge checks which elements are null. A valid
 *   Arrow export of another type is a dtype that did not survive (exchange.dtype). Bit-packed
 *   booleans ("b") give no view in place: the protocol modules unpack them
 *   (ic_arrow_unpack_bools) into a byte each, in memory the case keeps (the record's `owned`),
 *   and compare that copy.
 * - The release watch: ic_arrow_watch replaces a struct's release callback and private_data
 *   with a counting callback and the entry's id, and records the originals in a process-wide
 *   table (mutex-protected: Arrow lets release run on any thread, also after the case that
 *   created it is over). The counting callback never touches Python. The first call puts the
 *   producer's release and private_data back into the struct it was given (which may be a
 *   consumer's moved copy) and forwards to it; later calls are counted and not forwarded, so a
 *   double release becomes a finding instead of a double free. A call whose id the table no
 *   longer knows is counted as unmatched and not forwarded.
 * - Device arrays: the device fields are checked (a known device type, reserved bytes zero);
 *   only CPU arrays have their buffers validated and compared, as the GPU side of this
 *   protocol is not written yet. interopcheck's own consumer also asks with an unknown keyword
 *   (the unknown_keyword variant), which a producer must refuse with NotImplementedError.
 * - The ops follow ic_protocol.h. The proxy keeps the last (schema, array) tuple it handed out
 *   in proxy->last_export until finish(), which drops it so that the capsule destructors of
 *   an unconsumed export run before the release counts are read. interopcheck's own consumer
 *   moves both structs out of their capsules, as a consumer must, and releases them when its
 *   handle goes.
 */
#ifndef IC_ARROW_H
#define IC_ARROW_H

#include <stdbool.h>
#include <stddef.h>

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* The Arrow C data interface's structs, from the pyarrow package's arrow/c/abi.h (meson.build
 * finds it; nothing of it is copied here). */
#include <arrow/c/abi.h>

#define IC_ARROW_SCHEMA_CAPSULE "arrow_schema"
#define IC_ARROW_ARRAY_CAPSULE  "arrow_array"
#define IC_ARROW_DEVICE_ARRAY_CAPSULE "arrow_device_array"

/* What the validator read of one export: copies, never the producer's memory. */
struct ic_arrow_export {
    struct ArrowSchema schema;
    struct ArrowArray array;
    char format[32];        /* the schema's format string, as far as it could be read */
    const void *buffers[2]; /* the first two entries of array.buffers, when readable */
    bool structs_read;      /* both structs were read */
    bool bools; /* bit-packed booleans, checked and readable: ic_arrow_unpack_bools reads them */
};

/* Validates the schema and array at `schema_addr` and `array_addr` (a producer's pointers,
 * read through the guard), filling `ret` with what was read and, when the export can be
 * compared, `ret_view` (*ret_have_view true). Writes findings into `diag` and a one-line
 * description into `detail`. Returns 0, or IC_EINVAL for NULL arguments. */
int ic_arrow_check_structs(const void *schema_addr, const void *array_addr, bool nulls_expected,
                           struct ic_diag *diag, struct ic_arrow_export *ret,
                           struct ic_view *ret_view, bool *ret_have_view, char *detail,
                           size_t detail_size);

/* The same for the C device data interface: the ArrowDeviceArray at `device_addr` (whose
 * first member is the ArrowArray). Its device fields are validated (rule 6.5.6); a CPU array
 * is then validated and viewed as above, another device's is not (a warning says so, and
 * there is no view). */
int ic_arrow_check_device_structs(const void *schema_addr, const void *device_addr,
                                  bool nulls_expected, struct ic_diag *diag,
                                  struct ic_arrow_export *ret, struct ic_view *ret_view,
                                  bool *ret_have_view, char *detail, size_t detail_size);

/* The elements of a bit-packed boolean export (`ex->bools`), one byte each (0 or 1), into
 * `out` (ex->array.length bytes). IC_EINVAL when `ex` is no such export, IC_EFAULT when the
 * bitmap cannot be read after all. */
int ic_arrow_unpack_bools(const struct ic_arrow_export *ex, unsigned char *out);

/* The view of `length` unpacked booleans at `bytes`: a host copy, read-only. */
void ic_arrow_bool_view(const unsigned char *bytes, int64_t length, struct ic_view *view);

/* The dtype whose Arrow format string is `format` (ic_dtype.h's arrow column); INVALID for
 * any other type, such as "b", Arrow's bit-packed boolean. */
enum ic_dtype ic_arrow_format_dtype(const char *format);

/* A PyCapsule named arrow_schema holding a new ArrowSchema of `format` (nullable, no name),
 * which the capsule releases unless the one it is handed to moves it out: a requested_schema.
 * New reference; NULL with an exception set. */
PyObject *ic_arrow_schema_capsule_new(const char *format);

/* The format string of the ArrowSchema at `schema_addr` (a producer's; read through the
 * guard) into `format`. IC_EFAULT when it cannot be read, IC_EINVAL when empty. */
int ic_arrow_schema_format(const void *schema_addr, char *format, size_t size);

struct ic_py_exc;

/* The producer refused its own type as requested_schema with `exc`: arrow.requested_schema
 * against it (rule 6.5.9), the only verdict on that refusal. */
void ic_arrow_requested_refused(struct ic_export_record *rec, const char *format,
                                const struct ic_py_exc *exc);

/* Instruments the release callback of the struct at `addr` (an ArrowSchema when `is_schema`,
 * else an ArrowArray): *ret_id identifies its entry. IC_EFAULT when the struct cannot be read
 * or written, IC_EINVAL when it is released already (release is NULL), IC_ENOMEM. */
int ic_arrow_watch(void *addr, bool is_schema, int *ret_id);

struct ic_arrow_watch_state {
    int calls;      /* calls of the counting callback */
    bool forwarded; /* the first call reached the producer's release */
    bool left_set;  /* after the producer's release returned, release was still set */
};

/* The counts of entry `id`. IC_ENOTFOUND when the table no longer has it. */
int ic_arrow_watch_state(int id, struct ic_arrow_watch_state *ret);

/* The case is done with entry `id`: an entry already called is retired now, one not called yet
 * when its call comes (a later call is then unmatched). */
void ic_arrow_watch_release(int id);

/* Calls that named an id the table did not know, since the process started. */
int ic_arrow_watch_unmatched(void);

#endif
