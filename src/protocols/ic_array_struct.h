/*
 * ic_array_struct: NumPy's legacy __array_struct__ (protocols.md §4.3): a PyCapsule holding
 * a PyArrayInterface struct.
 *
 * Contract
 * - The struct is declared here from the documented layout (protocols.md §4.3), with its
 *   offsets checked at compile time on LP64; NumPy's headers are never included.
 * - ic_array_struct_check validates a capsule and writes findings citing "array_struct
 *   4.5.6". It needs the GIL, reads the struct and the shape/strides arrays it points to
 *   (never more than nd entries, nothing when nd is out of range), never reads `descr`
 *   beyond its pointer value, and changes nothing (unlike NumPy's consumer, which clears
 *   NOTSWAPPED in place). The struct and the arrays are copied through the guard
 *   (ic_guard.h) and the elements at data checked readable: memory that cannot be read is
 *   array_struct.memory (no view), never a fault.
 * - The view: data as given (the struct points at the first element), strides in bytes (C
 *   strides when the struct has none), dtype from typekind and itemsize (IC_DTYPE_INVALID
 *   for byte-swapped data or types the tester does not exchange), readonly from the absence
 *   of WRITEABLE, device CPU. The memory belongs to the capsule's owner: whoever holds the
 *   capsule keeps it alive.
 * - The ops: the proxy offers only the attribute __array_struct__, validates every read and
 *   returns the producer's capsule unchanged. There are no lifetime rules (no finish).
 */
#ifndef IC_ARRAY_STRUCT_H
#define IC_ARRAY_STRUCT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_protocol.h"
#include "ic_view.h"

/* PyArrayInterface flags (protocols.md §4.3). */
enum {
    IC_ARR_C_CONTIGUOUS = 0x1,
    IC_ARR_F_CONTIGUOUS = 0x2,
    IC_ARR_ALIGNED = 0x100,
    IC_ARR_NOTSWAPPED = 0x200,
    IC_ARR_WRITEABLE = 0x400,
    IC_ARR_HAS_DESCR = 0x800,
};

/* NumPy's PyArrayInterface, field for field. */
struct ic_pyarrayinterface {
    int two;             /* always 2: a sanity check */
    int nd;              /* number of dimensions */
    char typekind;       /* a typestr kind character */
    int itemsize;        /* bytes per element */
    int flags;           /* IC_ARR_* */
    Py_ssize_t *shape;   /* nd entries */
    Py_ssize_t *strides; /* nd entries, bytes; NULL means C-contiguous */
    void *data;          /* first element */
    PyObject *descr;     /* read only when flags has IC_ARR_HAS_DESCR */
};

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(offsetof(struct ic_pyarrayinterface, two) == 0, "PyArrayInterface.two");
_Static_assert(offsetof(struct ic_pyarrayinterface, nd) == 4, "PyArrayInterface.nd");
_Static_assert(offsetof(struct ic_pyarrayinterface, typekind) == 8, "PyArrayInterface.typekind");
_Static_assert(offsetof(struct ic_pyarrayinterface, itemsize) == 12, "PyArrayInterface.itemsize");
_Static_assert(offsetof(struct ic_pyarrayinterface, flags) == 16, "PyArrayInterface.flags");
_Static_assert(offsetof(struct ic_pyarrayinterface, shape) == 24, "PyArrayInterface.shape");
_Static_assert(offsetof(struct ic_pyarrayinterface, strides) == 32, "PyArrayInterface.strides");
_Static_assert(offsetof(struct ic_pyarrayinterface, data) == 40, "PyArrayInterface.data");
_Static_assert(offsetof(struct ic_pyarrayinterface, descr) == 48, "PyArrayInterface.descr");
_Static_assert(sizeof(struct ic_pyarrayinterface) == 56, "PyArrayInterface size");
#endif

/* Validates an __array_struct__ value (rule 4.5.6). *ret_have_view is false when the export
 * cannot be described. Returns 0, or IC_EINVAL for NULL arguments. */
int ic_array_struct_check(PyObject *capsule, struct ic_diag *diag, struct ic_view *ret_view,
                          bool *ret_have_view);

#endif
