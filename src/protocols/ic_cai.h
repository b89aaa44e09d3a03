/*
 * ic_cai: the CUDA Array Interface, version 3 (protocols.md §3): the validator of the dict a
 * producer returns from __cuda_array_interface__, and the ops of the "cuda_array_interface"
 * protocol.
 *
 * Contract
 * - ic_cai_check validates one dict against rules 3.1.1-3.1.9 and writes findings citing
 *   the cai.* rules of ic_rules.h; rule 3.1.10 (a consumer that writes honours the read-only flag) is
 *   the consumer's behaviour and is judged by the exchange. It needs the GIL. It never
 *   changes the dict, never dereferences the data pointer (device memory: nothing here
 *   touches the GPU), and runs producer code only to read a mask's own
 *   __cuda_array_interface__. Every exception raised while reading the producer's objects is
 *   fetched and becomes a finding; none is left pending.
 * - The view describes device memory the producer owns: data is the pointer of data[0] (the
 *   first element), device_type IC_DEVICE_CUDA, device_id -1 (the dict does not say which
 *   device: the exchange resolves it from the driver), strides in bytes (C strides when the
 *   dict has none), dtype from the typestr (IC_DTYPE_INVALID for types the tester does not
 *   exchange), readonly from data[1], readonly_known true. The export carries no lifetime:
 *   the view is valid only while the producer's array is alive, which the caller ensures.
 * - Streams (rule 3.1.9): only an export of version 3 or later (or without a readable
 *   version) hands over a stream. A valid one (1: legacy default stream, 2: per-thread
 *   default stream, or a cudaStream_t handle) is reported in `struct ic_cai_info` and, by the
 *   ops, in the record's has_stream / stream. 0 and negative values are errors and report no
 *   stream; a stream in an older version is ignored with a warning.
 * - The ops (ic_protocol.h): the proxy offers only the attribute __cuda_array_interface__,
 *   validates every read and returns the producer's dict unchanged; reference_consume reads
 *   the attribute once, validates it, and its handle is the dict. There is no inspect,
 *   observe or finish: the protocol has no lifetime rules. A failed read is the producer's
 *   exception, recorded in the record (the proxy lets it reach the consumer; the reference
 *   consumer clears it).
 */
#ifndef IC_CAI_H
#define IC_CAI_H

#include <stdbool.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* The protocol version this tester knows (the first that hands over a stream). */
#define IC_CAI_VERSION 3

/* Stream values with a meaning of their own (rule 3.1.9); any other positive value is a
 * cudaStream_t handle. */
#define IC_CAI_STREAM_LEGACY     1 /* the legacy default stream */
#define IC_CAI_STREAM_PER_THREAD 2 /* the per-thread default stream */

/* What a dict says beyond its view. */
struct ic_cai_info {
    bool have_version;   /* version is present and an int that fits in int64 */
    int64_t version;     /* that version, 0 when not have_version */
    bool stream_applies; /* version >= 3, or no readable version: the stream key means CAI v3 */
    bool has_stream;     /* a valid stream was named: 1, 2 or a handle */
    int64_t stream;      /* that stream, 0 when none */
    bool has_mask;       /* mask is present and not None */
};

/* Validates a __cuda_array_interface__ value (rules 3.1.1-3.1.9; see the contract). *ret_view
 * is written and *ret_have_view set only when the export can be described (a dict whose shape,
 * typestr, strides and data are readable and consistent). `ret_info` may be NULL. Returns 0,
 * or IC_EINVAL for NULL arguments. */
int ic_cai_check(PyObject *value, struct ic_diag *diag, struct ic_view *ret_view,
                 bool *ret_have_view, struct ic_cai_info *ret_info);

#endif
