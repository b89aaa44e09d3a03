"""nanoarrow: the Arrow project's small C library, in Python (nanoarrow.c_array, CArray).

Cannot: be anything but 1-D (only the `flat`, `offset` and `empty` layouts: slicing a CArray
with a unit step is a view with an offset), hold complex or bfloat16, or offer the buffer
protocol or the NumPy interfaces. Its booleans are bit-packed. Arrays
are immutable (always read-only). It exports the Arrow PyCapsule interface (__arrow_c_array__)
and imports it with nanoarrow.c_array(obj), which wraps the producer's buffers.
"""

import _probekit

NAME = "nanoarrow"

na = None

# Arrow's primitive types (booleans bit-packed)
DTYPES = _probekit.dtypes_except("bfloat16", "complex64", "complex128")

# How a reproducer spells nanoarrow (probes/README.md, "Reproducers"): c_array from the values,
# sliced as build() slices; imports read back through nanoarrow.Array.
REPRO = {
    "import": "import nanoarrow as na",
    "ns": "na",
    "build": "na.c_array(values, {dtype})",
    "dtype_name": "{ns}.{dtype}()",
    "dtypes": {"bool": "na.bool_()"},
    "make_readonly": "# nanoarrow arrays are immutable: x is read-only as it is",
    "consume": {"arrow": "na.c_array({obj})"},
    "tolist": "na.Array({y}).to_pylist()",
    "dtype": _probekit.ARROW_FORMAT_DTYPE_REPRO,
    "pointer": "{y}.buffers[1] + {y}.offset * " + _probekit.ARROW_FORMAT_ITEMSIZE_REPRO,
    "shape": "({y}.length,)",
}


def load():
    global na
    import nanoarrow as _na

    na = _na
    return _probekit.arrow_column_info(
        na.__version__,
        column="a nanoarrow CArray",
        exports=_probekit.exports("arrow"),
        # nanoarrow.c_array moves the structs out of the capsules and keeps the producer's
        # buffers (nanoarrow's documentation of c_array)
        imports=_probekit.imports({"arrow": "nanoarrow.c_array(obj)"}, zero_copy=True,
                                  readonly="always"),
        nulls=True,
    )


def build(data, dtype, ops, readonly=False, valid=None):
    if dtype not in DTYPES:
        raise TypeError(f"nanoarrow has no {dtype} type")
    n = len(data) // _probekit.ITEMSIZE[dtype]
    bitmap = None if valid is None else _probekit.pack_bools(valid)  # the nulls variants'
    # a copy of its own: bytes(data) would be `data` itself, which the driver still owns
    if dtype == "bool":
        x = na.c_array_from_buffers(na.bool_(), n, [bitmap, _probekit.pack_bools(data)])
    else:
        x = na.c_array_from_buffers(getattr(na, dtype)(), n, [bitmap, bytearray(data)])
    for name, arg in ops:
        if name != "slice" or len(arg) != 1:
            raise NotImplementedError(f"a nanoarrow CArray cannot express {name} {arg} as a view")
        start, stop, step = slice(*arg[0]).indices(x.length)
        if step != 1:
            raise NotImplementedError(f"a nanoarrow CArray cannot slice with step {step}")
        x = x[start:max(stop, start)]
    return x


def describe(x):
    dtype = _probekit.ARROW_FORMAT_DTYPES.get(x.schema.format, x.schema.format)
    # the validity bitmap shares the array's offset; none, no nulls
    validity = (x.buffers[0], x.offset) if x.buffers[0] else None
    if dtype == "bool":
        # bit-packed: no byte per element to point at; the elements go over as bytes (a null
        # as 0: only the valid ones are compared)
        values = bytes(int(v or 0) for v in na.Array(x).to_pylist())
        return {"bytes": values, "shape": [x.length], "dtype": dtype, "readonly": True,
                "device": list(_probekit.CPU), "validity": validity}
    address = x.buffers[1] + x.offset * _probekit.ITEMSIZE[dtype] if x.length else 0
    return _probekit.pointer_description(address, [x.length], None, dtype, True) | {
        "validity": validity}


def consume(obj, protocol, dtype):
    return na.c_array(obj)
