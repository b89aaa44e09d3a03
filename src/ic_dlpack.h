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
 * - The deleter watch: ic_dlpack_watch replaces a managed struct's deleter with a counting
 *   one and records the original in a process-wide table (mutex-protected, so the deleter may
 *   run on any thread, also after the case that created it is over). The counting deleter
 *   never touches Python; it forwards to the original exactly once, and counts but does not
 *   forward later calls, so a double call becomes a finding instead of a double free. A
 *   table entry belongs to whoever holds its id until ic_dlpack_watch_release; an entry
 *   released before its deleter ran retires itself on the first call. A call for a struct
 *   the table no longer knows cannot be forwarded (the original is unknown): it is only
 *   counted in ic_dlpack_watch_unmatched.
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

/* Validates a tensor (rules 2.5.12-19, 21) and, when it can be described, writes the view:
 * data with byte_offset applied, strides in bytes (C strides when the producer sent NULL),
 * dtype IC_DTYPE_INVALID for legal DLPack types the tester does not exchange, readonly from
 * the READ_ONLY flag (readonly_known false for legacy structs). *ret_have_view is false when
 * the tensor cannot be described (negative ndim, shape NULL, an overflowing size, a packed
 * sub-byte type whose element strides have no byte equivalent). */
int ic_dlpack_check_tensor(const DLTensor *tensor, const struct ic_dlpack_header *header,
                           struct ic_diag *diag, struct ic_view *ret_view, bool *ret_have_view);

/* What a capsule holds, as far as it may be read. */
struct ic_dlpack_capsule {
    bool usable;   /* a fresh name and a non-NULL pointer: the deleter can be reached */
    bool readable; /* usable and a version the tester understands: the tensor can be read */
    bool used;     /* the name is used_*: the capsule was consumed already */
    struct ic_dlpack_header header;
    void *managed;          /* DLManagedTensor* or DLManagedTensorVersioned*, or NULL */
    const DLTensor *tensor; /* NULL unless readable */
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
    int calls;        /* calls of the instrumented deleter */
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

/* Finds the entry among ids[0..count) that instruments `managed`; -1 when none. Compares
 * addresses only (the struct may have been freed). */
int ic_dlpack_watch_find(const void *managed, const int *ids, int count);

/* Gives the id up: an entry whose deleter ran is retired now, one whose deleter has not run
 * yet retires itself when it does. */
void ic_dlpack_watch_release(int id);

/* Calls of the counting deleter for structs the table no longer knew (they were not
 * forwarded). */
int ic_dlpack_watch_unmatched(void);

#endif
