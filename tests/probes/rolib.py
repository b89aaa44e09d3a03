"""A library that gets read-only wrong, for interopcheck's own integration tests.

Its arrays wrap NumPy arrays. What goes wrong depends on the dtype:

  as a producer (its read-only arrays, the `readonly` variant, exported to numpy):
    float32   __array_interface__ says writable for read-only memory  -> fail (array_interface.readonly)
              __array_struct__ sets WRITEABLE for read-only memory     -> fail (array_struct.flags)
    float64   exports read-only arrays correctly                       -> pass
  as a consumer (importing numpy's arrays):
    int32     describes its import of read-only memory as writable      -> fail (exchange.readonly)
    int16     describes its import of writable memory as read-only      -> fail (exchange.writable)
    float64   imports correctly                                         -> pass

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

np = None
NPY_ARRAY_WRITEABLE = 0x0400


class _ArrayInterface(ctypes.Structure):
    """NumPy's PyArrayInterface, the struct an __array_struct__ capsule points at."""
    _fields_ = [("two", ctypes.c_int), ("nd", ctypes.c_int), ("typekind", ctypes.c_char),
                ("itemsize", ctypes.c_int), ("flags", ctypes.c_int),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("data", ctypes.c_void_p), ("descr", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class RoArray:
    def __init__(self, array):
        self.array = array

    def _lies(self):
        return self.array.dtype.name == "float32" and not self.array.flags.writeable

    @property
    def __array_interface__(self):
        spec = dict(self.array.__array_interface__)
        if self._lies():
            spec["data"] = (spec["data"][0], False)
        return spec

    @property
    def __array_struct__(self):
        capsule = self.array.__array_struct__
        if self._lies():
            # NumPy allocates a fresh struct for every capsule: changing it touches no one else
            struct = _ArrayInterface.from_address(_capsule_pointer(capsule, None))
            struct.flags |= NPY_ARRAY_WRITEABLE
        return capsule


class Imported:
    """What rolib's consumer returns: a NumPy view whose read-only flag it misreports."""

    def __init__(self, array, readonly):
        self.array, self.readonly = array, readonly


def load():
    global np
    import numpy as _np

    np = _np
    return {
        "version": "0.0.1",
        "devices": ["cpu"],
        "dtypes": ["float32", "float64", "int32", "int16"],
        "layouts": ["contiguous", "flat"],
        "notes": {"bool": "rolib has only the dtypes of its test plan"},
        "readonly": True,
        "exports": {"array_interface": {"call": "RoArray.__array_interface__"},
                    "array_struct": {"call": "RoArray.__array_struct__"}},
        "imports": {
            "array_interface": {"call": "numpy.asarray(obj)", "zero_copy": True, "typed": True,
                                "readonly": True},
        },
    }


def build(data, dtype, ops, readonly=False):
    array = _probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops)
    if readonly:
        array.setflags(write=False)
    return RoArray(array)


def describe(x):
    if isinstance(x, Imported):
        return _probekit.numpy_like_description(x.array, readonly=x.readonly)
    return _probekit.numpy_like_description(x.array if isinstance(x, RoArray) else x)


def consume(obj, protocol, dtype):
    array = np.asarray(obj)
    readonly = not array.flags.writeable
    if dtype == "int32":
        readonly = False
    elif dtype == "int16":
        readonly = True
    return Imported(array, readonly)
