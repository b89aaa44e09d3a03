"""xarray's DataArray: labelled N-D arrays over another library's array.

A DataArray holds the array it is given (a NumPy array here) and keeps its layout, so every NumPy
layout exists; build() wraps its own NumPy view. It exports __array__ (the NumPy array under
it) and imports with xarray.DataArray(obj), which calls obj.__array__() once and keeps the
result (xarray's documentation: "data: array_like"). Cannot: hold bfloat16 with its arithmetic
(compute() is skipped for it), make a read-only DataArray through its own API (only through
the array under it, which build() uses).
"""

import _probekit

NAME = "xarray"

xr = None
np = None

REPRO = {
    "import": "import xarray as xr\nimport numpy as np",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    **_probekit.NUMPY_DTYPES_REPRO,
    "make_readonly": "x.setflags(write=False); x = xr.DataArray(x)",
    "export": "xr.DataArray(x)",
    "consume": {"array": "xr.DataArray({obj})"},
    "tolist": "{y}.values.tolist()",
    "pointer": "{y}.data.ctypes.data",
    "readonly": "not {y}.data.flags.writeable",
    "compute": lambda dtype: "{y} | False" if dtype == "bool" else "{y} * 1",
    "read": "{y}[{index}].item()",
    "write": "{y}[{index}] = {value}",
}


def load():
    global xr, np
    import numpy
    import xarray

    xr, np = xarray, numpy
    return _probekit.load_info(
        xr.__version__,
        readonly=True,
        # its __arrow_c_stream__ is a table (a struct of one field, "values", the elements
        # flattened), not an array: not offered as the arrow_stream protocol
        exports=_probekit.exports("array"),
        # DataArray(obj) stores np.asarray(obj): __array__'s result, kept as it is
        imports=_probekit.imports({"array": "xarray.DataArray(obj)"}, zero_copy=False,
                                  readonly=True),
        compute=_probekit.compute_info(
            _probekit.SCALAR_IDENTITY_CALL,
            missing={"bfloat16": "xarray's arithmetic on ml_dtypes' bfloat16 goes through float"}),
    )


def build(data, dtype, ops, readonly=False):
    x = _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops, xp=np,
                            unit_stride=_probekit.numpy_unit_stride)
    if readonly:
        x.setflags(write=False)
    return xr.DataArray(x)


def describe(x):
    # .data is the array the DataArray holds (no copy): NumPy's attributes locate it
    return _probekit.numpy_like_description(x.data)


def consume(obj, protocol, dtype):
    return xr.DataArray(obj)


def compute(y):
    # xarray's arithmetic, which runs NumPy's kernels on the data under it into a new DataArray
    return _probekit.scalar_identity(y)


def read(x, index):
    return x[index].item()


def write(x, index, value):
    x[index] = value
