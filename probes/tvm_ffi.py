"""Apache TVM FFI (tvm_ffi.Tensor): a DLPack container with any strides.

tvm_ffi has no allocator and no array operations reachable from Python: a Tensor exists only
as an import (tvm_ffi.from_dlpack). build() therefore lays each layout out as a NumPy view and
imports that view, so the Tensor carries the layout and the memory stays NumPy's.
Cannot: complex (from_dlpack raises "DLDataType contains unknown type_code=5"), bfloat16 (NumPy
cannot export it over DLPack), read-only tensors (no flag, and NumPy's legacy export that
from_dlpack asks for refuses read-only arrays). Exports only DLPack; imports only DLPack.
"""

import _probekit

NAME = "tvm_ffi"

tvm_ffi = None
np = None


def _repro_build(dtype, ops, readonly):
    # build()'s steps from a list: a NumPy array, its views, then tvm_ffi.from_dlpack of the view
    if readonly:
        raise NotImplementedError("tvm_ffi cannot make a read-only tensor")
    np_dtype = _probekit.numpy_dtype_text(dtype)
    # np.fromiter, not np.array: an empty np.array has stride 0, build()'s empty base has the
    # itemsize, and tvm_ffi keeps the difference
    lines = [f"view = np.fromiter(values, dtype={np_dtype})"]
    for name, arg in ops:
        if name == "broadcast":
            shape = tuple(arg)
            lines += [
                "# np.broadcast_to gives a read-only view, which NumPy's legacy DLPack export",
                "# (the one tvm_ffi asks for) refuses; as_strided makes the same zero-stride view",
                "# writable",
                f"strides = np.broadcast_to(view, {shape}).strides",
                f"view = np.lib.stride_tricks.as_strided(view, shape={shape}, strides=strides)",
            ]
        else:
            lines.append(_probekit.op_line(name, arg, x="view"))
    lines.append("x = tvm_ffi.from_dlpack(view)")
    return lines


# How a reproducer spells tvm_ffi (probes/README.md, "Reproducers"). A Tensor has no element
# access of its own, so a reproducer reads one through NumPy, as build() makes one through it.
REPRO = {
    "import": "import numpy as np\nimport tvm_ffi",
    "ns": "tvm_ffi",
    "build": _repro_build,
    "consume": {
        "dlpack": "tvm_ffi.from_dlpack({obj})",
        "dlpack_capsule": "tvm_ffi.from_dlpack({obj})",
    },
    "tolist": "np.from_dlpack({y}).tolist()",
    "pointer": "{y}.data_ptr()",
}


def load():
    global tvm_ffi, np, _capsule_pointer, _c_uint8
    import ctypes

    import numpy as _np
    import tvm_ffi as _tvm_ffi

    tvm_ffi, np = _tvm_ffi, _np
    # a function object of our own: setting restype on ctypes.pythonapi's would change it for
    # every other user in the process
    _capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    _c_uint8 = ctypes.c_uint8
    no_complex = "tvm_ffi.from_dlpack rejects kDLComplex (unknown type_code=5)"
    return _probekit.load_info(
        tvm_ffi.__version__,
        missing={
            "bfloat16": "built through NumPy, which cannot export bfloat16 over DLPack",
            "complex64": no_complex,
            "complex128": no_complex,
            "unit_dims_odd": "a DLPack tensor's " + _probekit.UNIT_STRIDE_NOTE,
        },
        exports=_probekit.exports("dlpack"),
        # from_dlpack's docstring: "A TVM FFI Tensor that references the same memory."
        imports=_probekit.imports({"dlpack": "tvm_ffi.from_dlpack(obj)",
                                   "dlpack_capsule": "tvm_ffi.from_dlpack(capsule)"},
                                  zero_copy=True, readonly=False),
    )


def _broadcast(x, shape):
    # numpy.broadcast_to returns a read-only view, which NumPy's legacy DLPack export refuses;
    # as_strided makes the same zero-stride view writable
    strides = _probekit.broadcast_strides(shape, x.shape, x.strides)
    return np.lib.stride_tricks.as_strided(x, shape=tuple(shape), strides=strides)


def build(data, dtype, ops, readonly=False):
    view = _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops, broadcast=_broadcast)
    return tvm_ffi.from_dlpack(view)


_DL_COMPLEX = 5  # DLDataTypeCode kDLComplex
# DLManagedTensorVersioned: version (8 bytes), manager_ctx, deleter, flags (8 each), then the
# DLTensor: data (8), device (8), ndim (4), dtype {code: uint8, bits: uint8, lanes: uint16}
_DTYPE_OFFSET = 52


_capsule_pointer = None  # PyCapsule_GetPointer, made once by load()
_c_uint8 = None


def _dlpack_type_code(x):
    """The DLDataType code of x, from a versioned capsule of x's own (released unconsumed);
    None where this tvm_ffi makes none."""
    to_dlpack = getattr(x, "_to_dlpack_versioned", None)
    if to_dlpack is None:
        return None
    try:
        address = _capsule_pointer(to_dlpack(), b"dltensor_versioned")
    except Exception:  # a capsule of another name or none: Tensor.dtype is asked as before
        return None
    return _c_uint8.from_address(address + _DTYPE_OFFSET).value


def describe(x):
    kind, _, index = str(x.device).partition(":")
    if kind != "cpu":
        raise ValueError(f"not a CPU tensor: {x.device}")
    # the device id a capsule gave it (a CPU tensor of another id than 0 is the exporter's
    # doing, and the judge says so): described as it is
    device = {"device": ["cpu", int(index or 0)]}
    # Tensor.dtype raises for complex, and tvm_ffi's first exception in a process costs seconds
    # (it symbolises a backtrace through every loaded library): the type code is read from the
    # Tensor's own DLPack export first, and Tensor.dtype is not asked for a complex one
    complex_code = _dlpack_type_code(x) == _DL_COMPLEX
    try:
        if complex_code:
            raise ValueError("tvm_ffi names no complex dtype")
        name = _probekit.dtype_name(x.dtype)
    except ValueError:
        # from_dlpack accepts a complex capsule, then its own Tensor.dtype raises: the
        # library cannot name the dtype, and without it no byte strides can be given
        return _probekit.pointer_description(x.data_ptr(), x.shape, None, None, None) | device
    size = _probekit.ITEMSIZE.get(name)
    if size is None:
        raise ValueError(f"tvm_ffi names a dtype the interface does not know: {name!r}")
    return _probekit.pointer_description(
        x.data_ptr(), x.shape, [s * size for s in x.strides], name, None
    ) | device


def consume(obj, protocol, dtype):
    return tvm_ffi.from_dlpack(obj)
