/*
 * ic_array_interface: NumPy's __array_interface__, version 3 (protocols.md §4.1, §4.2), and
 * the typestr grammar it shares with the CUDA Array Interface.
 *
 * Contract
 * - ic_typestr_parse is a pure function of its text (no Python, no allocation, any thread).
 * - ic_array_interface_check validates a dict as returned by the attribute and writes
 *   findings citing protocols.md §4.5 ("array_interface 4.5.2"). It needs the GIL. It never
 *   changes the dict; when `data` is a buffer exporter or None it asks that exporter (or
 *   `owner`) for a PyBUF_SIMPLE buffer to learn the address and releases it before
 *   returning, so the view's memory is kept alive by the exporter, not by the check. An
 *   exception raised while reading the producer's objects is cleared and becomes a finding.
 * - The elements the view addresses are checked readable through the guard (ic_guard.h)
 *   before the view is given: a pointer into memory that is not mapped is
 *   array_interface.data (no view), never a fault.
 * - The view: data is the first element (offset applied for buffer data; a tuple pointer is
 *   already the first element), strides in bytes (C strides when the dict has none), dtype
 *   IC_DTYPE_INVALID for typestrs the tester does not exchange (non-native byte order
 *   included), readonly from data[1] or the buffer, device CPU.
 * - The ops: the proxy offers only the attribute __array_interface__, validates every read
 *   and returns the producer's dict unchanged. There are no lifetime rules (no finish).
 */
#ifndef IC_ARRAY_INTERFACE_H
#define IC_ARRAY_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_dtype.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* A parsed typestr, "<f8", "|b1", ">i4", "<M8[ns]", "<U5". */
struct ic_typestr {
    char byteorder;      /* as written: '<', '>', '|', or '=' (NumPy accepts it, the protocol
                          * does not list it: standard_order is then false) */
    bool standard_order; /* one of the protocol's three byte-order characters */
    char kind;           /* one of "tbiufcmMOSUV" */
    int64_t count;       /* the number after the kind: bytes, bits for 't', characters for 'U' */
    int64_t itemsize;    /* bytes of one element ('U': 4 per character; 't': bits rounded up) */
    char unit[16];       /* datetime/timedelta unit ("ns", "2s"), "" when none */
    bool native;         /* this machine's byte order, or order does not matter */
    enum ic_dtype dtype; /* the tester's dtype when native and exchanged, else INVALID */
};

/* Parses a typestr. IC_EINVAL when it does not follow the grammar or the size is illegal
 * for the kind; then `why` (why_size >= 1 bytes) says what is wrong. */
int ic_typestr_parse(const char *text, struct ic_typestr *ret, char *why, size_t why_size);

/* The byte total of a `descr` list of (name, type[, shape]) fields, nested lists followed up
 * to 8 levels deep (rule 4.5.3; the CUDA Array Interface's descr is the same). IC_EINVAL when
 * it is malformed; then `why` (why_size >= 1 bytes) says what is wrong. Needs the GIL; raises
 * nothing. */
int ic_descr_size(PyObject *descr, int64_t *ret_size, char *why, size_t why_size);

/* Validates an __array_interface__ value (rules 4.5.1-5). `owner` is the object the
 * attribute was read from (its buffer is the data when data is None); it may be NULL, and
 * then such data cannot be located. *ret_have_view is false when the export cannot be
 * described. Returns 0, or IC_EINVAL for NULL arguments. */
int ic_array_interface_check(PyObject *value, PyObject *owner, struct ic_diag *diag,
                             struct ic_view *ret_view, bool *ret_have_view);

#endif
