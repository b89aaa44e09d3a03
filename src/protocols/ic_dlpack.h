/*
 * ic_dlpack: the DLPack protocol (protocols.md §2): validation of capsules and tensors, the
 * instrumented deleter, and the ops of the "dlpack" (__dlpack__ / __dlpack_device__) and
 * "dlpack_capsule" (a bare capsule from a to_dlpack function) protocols.
 *
 * Contract
 * - Validators read what a producer exported and write findings citing protocols.md §2.5
 *   ("dlpack 2.5.13") or §2.3 ("dlpack 2.3 max_version"). They never call the deleter, never
 *   rename a capsule, and read nothing they are not allowed to: a versioned struct whose
 *   major version is not 1 is read up to its flags only, and shape/strides are never read
 *   when ndim is 0 or out of range. They return 0, or IC_EINVAL for NULL arguments.
 * - Everything the producer points to is read through the guard (ic_guard.h): the capsule's
 *   name, the managed struct, which is copied into ic_dlpack_capsule the moment the capsule is
 *   checked (nothing later reads the producer's struct for its fields), the shape and strides
 *   arrays, and, for host memory, every element the tensor addresses. Memory that cannot be
 *   read is a finding against the producer (dlpack.managed_tensor, dlpack.shape_strides,
 *   dlpack.address), never a fault, and the proxy withholds such an export from the consumer
 *   (it raises BufferError in its place), so that no library reads it either.
 * - The deleter watch: ic_dlpack_watch replaces a managed struct's deleter with a counting
 *   one and records the original in a process-wide table (mutex-protected, so the deleter may
 *   run on any thread, also after the case that created it is over). The counting deleter
 *   never touches Python; it forwards to the original exactly once, and counts but does not
 *   forward later calls, so a double call becomes a finding instead of a double free. A
 *   table entry belongs to whoever holds its id until ic_dlpack_watch_release; an entry
 *   released before its deleter ran retires itself on the first call. A call for a struct
 *   the table no longer knows cannot be forwarded (the original is unknown): it is only
 *   counted in ic_dlpack_watch_unmatched. The deleter field is read and replaced through the
 *   guard: a struct in memory that cannot be written is not instrumented (IC_EFAULT).
 * - Early calls: a call made while interopcheck's own consumer holds the tensor
 *   (ic_dlpack_watch_hold), or made from the producer's own code (while a __dlpack__ or
 *   __dlpack_device__ call into the producer runs on that thread) for a tensor a consumer
 *   took, is the producer freeing memory still in use. It is counted apart (early_calls) and
 *   not forwarded: the consumer's own call later is, so the memory stays valid while it is
 *   read. A producer that calls its deleter function directly, not through the struct's
 *   field, is not seen.
 * - Addresses are the table's key: when a struct was freed and a new one is allocated at
 *   the same address, the newest entry wins.
 * - The ops follow ic_protocol.h. The proxy keeps the last capsule it handed out in
 *   proxy->last_export until finish(), which drops it so that an unconsumed capsule's
 *   destructor runs before the deleter counts are read.
 */
#ifndef IC_DLPACK_H
#define IC_DLPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_config.h"
#include IC_DLPACK_INCLUDE

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* Capsule names (protocols.md §2.3). Static strings: a renamed capsule points at them. */
#define IC_DLPACK_NAME_LEGACY         "dltensor"
#define IC_DLPACK_NAME_VERSIONED      "dltensor_versioned"
#define IC_DLPACK_NAME_USED_LEGACY    "used_dltensor"
#define IC_DLPACK_NAME_USED_VERSIONED "used_dltensor_versioned"

/* Flag bits this build of the tester knows; anything above is "undefined" (rule 2.5.9). */
#define IC_DLPACK_KNOWN_FLAGS                                                                      \
    (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |                               \
     DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)

/* What the managed struct says about itself; the tensor rules depend on it (the strides
 * rule of DLPack 1.2, the read-only flag). Legacy structs have version 0.0 and flags 0. */
struct ic_dlpack_header {
    bool versioned;
    uint32_t major;
    uint32_t minor;
    uint64_t flags;
};

/* Validates a tensor (rules 2.5.12-19, 21) and, when it can be described, writes the view.
 * `tensor` itself is read directly (a copy, or the caller's struct); its shape and strides
 * arrays and, on the host, its elements are read through the guard. The view:
 * data with byte_offset applied, strides in bytes (C strides when the producer sent NULL),
 * dtype IC_DTYPE_INVALID for legal DLPack types the tester does not exchange, readonly from
 * the READ_ONLY flag (readonly_known false for legacy structs). *ret_have_view is false when
 * the tensor cannot be described (negative ndim, shape NULL, an overflowing size, a packed
 * sub-byte type whose element strides have no byte equivalent). */
int ic_dlpack_check_tensor(const DLTensor *tensor, const struct ic_dlpack_header *header,
                           struct ic_diag *diag, struct ic_view *ret_view, bool *ret_have_view);

/* What a capsule holds, as far as it may be read. */
struct ic_dlpack_capsule {
    bool usable;     /* a fresh name, a non-NULL pointer, a readable struct: the deleter can be
                      * reached */
    bool readable;   /* usable and a version the tester understands: the tensor was copied */
    bool used;       /* the name is used_*: the capsule was consumed already */
    bool unreadable; /* it points at memory the tester cannot read (its name, the struct, the
                      * shape or strides, the elements): no consumer may be given it */
    struct ic_dlpack_header header;
    void *managed; /* DLManagedTensor* or DLManagedTensorVersioned*, or NULL */
    /* A copy of the struct's dl_tensor, taken when the capsule was checked (its shape and
     * strides still point into the producer's memory); all zero unless readable. */
    DLTensor tensor;
};

/* Validates a capsule (rules 2.5.1-3, 2.5.7 by where the name lives, the flag part of 2.5.9)
 * and its tensor. `capsule` may be any object (an export that is not a capsule is a
 * finding). Needs the GIL. */
int ic_dlpack_check_capsule(PyObject *capsule, struct ic_dlpack_capsule *ret_info,
                            struct ic_diag *diag, struct ic_view *ret_view, bool *ret_have_view);

/* Writes "dltensor_versioned 1.3 flags=0x1" / "dltensor" for a checked capsule. */
void ic_dlpack_describe(const struct ic_dlpack_capsule *info, char *buf, size_t size);

/* The deleter watch (see the contract above). */
struct ic_dlpack_watch_state {
    bool versioned;
    bool had_deleter; /* the producer's deleter was non-NULL */
    bool forwarded;   /* the producer's deleter has been called (once) */
    bool consumed;    /* a consumer took ownership (ic_dlpack_watch_mark_consumed) */
    int calls;        /* calls of the instrumented deleter, early ones apart */
    int early_calls;  /* calls while the consumer still held the tensor (not forwarded) */
};

/* Instruments the deleter of `managed` (a DLManagedTensor* or DLManagedTensorVersioned*;
 * for the latter only the fields up to flags are touched, whatever its version). A struct
 * already instrumented keeps its entry, whose id is returned. IC_ENOMEM when the table
 * cannot grow (the struct is then left as it was). */
int ic_dlpack_watch(void *managed, bool versioned, int *ret_id);

/* State of a watch entry; IC_ENOTFOUND for an id that was released or never issued. */
int ic_dlpack_watch_state(int id, struct ic_dlpack_watch_state *ret);

/* Records that a consumer renamed the capsule of this entry (the deleter is then the
 * consumer's to call). */
void ic_dlpack_watch_mark_consumed(int id);

/* Marks the tensor as held by interopcheck's own consumer (true) until it lets go (false,
 * right before its own deleter call): a call in between is early. */
void ic_dlpack_watch_hold(int id, bool held);

/* Brackets a call into the producer's code (__dlpack__, __dlpack_device__) on this thread: a
 * deleter call for a consumed tensor in between is the producer's own, and early. Automatic
 * garbage collection is paused meanwhile, so that no consumer object is freed (and calls its
 * deleter) from inside the producer's call. Needs the GIL; calls nest. */
void ic_dlpack_producer_call_begin(void);
void ic_dlpack_producer_call_end(void);

/* Finds the entry among ids[0..count) that instruments `managed`; -1 when none. Compares
 * addresses only (the struct may have been freed). */
int ic_dlpack_watch_find(const void *managed, const int *ids, int count);

/* Gives the id up: an entry whose deleter ran is retired now, one whose deleter has not run
 * yet retires itself when it does. */
void ic_dlpack_watch_release(int id);

/* Calls of the counting deleter for structs the table no longer knew (they were not
 * forwarded). */
int ic_dlpack_watch_unmatched(void);

/* interopcheck's consumer as a bare capsule's taker: validates the capsule and its tensor,
 * watches the deleter, takes it (renames it used_*) and returns the import handle, whose
 * release calls the deleter. Findings go to rec. */
int ic_dlpack_take_capsule(PyObject *capsule, struct ic_export_record *rec, PyObject **ret_handle);

/* interopcheck's consumer of the c_api variant (ic_dlpack_c_api.c): the table of
 * type(target).__dlpack_c_exchange_api__ validated, the array exported through its
 * managed_tensor_from_py_object_no_sync and taken as a versioned capsule is
 * (ic_dlpack_take_capsule), compared with what __dlpack__ exports, and current_work_stream
 * asked. A refusal is recorded as the producer's (rec). IC_EPYTHON, with an exception set,
 * where this build's DLPack header predates the C exchange API. */
int ic_dlpack_c_api_consume(PyObject *target, struct ic_export_record *rec, PyObject **ret_handle);

#endif
