/*
 * ic_array_method: __array__(dtype=None, copy=None) with NumPy 2 copy semantics
 * (protocols.md §4.4, rule 4.5.7).
 *
 * Contract
 * - The result of __array__ must be a numpy.ndarray (a subclass is fine). That is decided
 *   from the type's MRO by name, so the tester never imports NumPy in C; the array is read
 *   through the buffer protocol (PyBUF_RECORDS_RO), and that buffer is released before the
 *   check returns: the view's memory is kept alive by whoever holds the array (the proxy's
 *   last_export, the consumer, or the reference consumer's handle).
 * - Findings cite "array 4.4" (what __array__ returns, the old signature) or "array 4.5.7"
 *   (how copy=False is refused). Everything needs the GIL; a producer's exception is
 *   recorded and, in the proxy, passed on to the consumer unchanged.
 * - Copying is the producer's choice unless the consumer passed copy: zero_copy_known is
 *   false, copy=True sets copy_expected and copy=False no_copy_required.
 */
#ifndef IC_ARRAY_METHOD_H
#define IC_ARRAY_METHOD_H

#include <stdbool.h>

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* True when obj is an instance of numpy.ndarray or of a subclass (found by name in the MRO). */
bool ic_array_method_is_ndarray(PyObject *obj);

/* Validates what __array__ returned (rule 4.4) and reads its view. Needs the GIL. Returns 0,
 * or IC_EINVAL for NULL arguments. */
int ic_array_method_check_result(PyObject *result, struct ic_diag *diag, struct ic_view *ret_view,
                                 bool *ret_have_view);

#endif
