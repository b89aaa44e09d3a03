/*
 * ic_buffer: the Python buffer protocol (PEP 3118, protocols.md §5): validation of a
 * Py_buffer against the flags it was requested with, a parser of struct / PEP 3118 format
 * strings for single items, and the ops of the "buffer" protocol.
 *
 * Contract
 * - ic_buffer_format_parse is a pure function of its text (no Python, any thread).
 * - ic_buffer_check reads a Py_buffer exactly as a consumer may (shape/strides/suboffsets
 *   only when non-NULL and ndim is in range) and writes findings citing the buffer.* rules
 *   of ic_rules.h. It needs the GIL (a compound format is sized by the struct module)
 *   and changes nothing; the buffer stays the caller's to release.
 * - What the exporter points to is read through the guard (ic_guard.h): the format, shape,
 *   strides and suboffsets are copied before use, and the bytes the view addresses at buf
 *   are checked readable. Memory that cannot be read is buffer.fields (no view), never a
 *   fault; the proxy then withholds the buffer (the consumer gets BufferError, and the
 *   exporter's get is released at once), so that no library reads it either.
 * - The view: data is buf, strides in bytes (C strides when the buffer has none), dtype
 *   from the format (IC_DTYPE_INVALID when PyBUF_FORMAT was not requested: raw bytes of
 *   `itemsize`), readonly from the buffer, device CPU. A buffer without shape is a 1-d run
 *   of len / itemsize items.
 * - The ops: the proxy offers only the buffer slots. Each get asks the producer with the
 *   consumer's flags, validates what came back, and hands the consumer a copy whose obj is
 *   the proxy; the producer's buffer lives in a heap slot (view->internal) until the
 *   consumer releases, and then it is released exactly once. Gets and releases are counted
 *   in the proxy, so the counts survive the record; finish() compares them (rule 5.1.9).
 */
#ifndef IC_BUFFER_H
#define IC_BUFFER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_dtype.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* A format string of one code, possibly repeated: "f", "<d", "=l", "Zd", "?", "2w". */
struct ic_buffer_format {
    char byteorder;      /* the prefix, '@' when there is none */
    bool native_order;   /* the bytes are in this machine's order */
    bool native_size;    /* '@' or '^' (or no prefix): C sizes ('l' is sizeof(long)) */
    char code[3];        /* "f", "Zd" */
    int64_t count;       /* the repeat count, 1 when there is none ("2w" is NumPy's <U2) */
    int64_t itemsize;    /* count x the code's size */
    enum ic_dtype dtype; /* the tester's dtype for one native exchanged code, else INVALID */
};

/* Parses a format of one (possibly repeated) code. IC_EUNSUPPORTED for a well-formed but
 * compound format (several codes, T{...}, sub-arrays: size those with
 * PyBuffer_SizeFromFormat), IC_EINVAL for a code that is no format code or one not allowed
 * with standard sizes. */
int ic_buffer_format_parse(const char *format, struct ic_buffer_format *ret);

/* Writes the name of a request, "PyBUF_RECORDS_RO" or "PyBUF_C_CONTIGUOUS | PyBUF_FORMAT". */
void ic_buffer_flags_name(int flags, char *buf, size_t size);

/* Validates a buffer obtained with `flags` (rules 5.1.1-7). *ret_have_view is false when it
 * cannot be described (indirect data, inconsistent fields). Returns 0, or IC_EINVAL for
 * NULL arguments. */
int ic_buffer_check(const Py_buffer *buffer, int flags, struct ic_diag *diag,
                    struct ic_view *ret_view, bool *ret_have_view);

#endif
