"""PyArrow arrays (pyarrow.Array of a primitive type, no nulls).

Cannot: be anything but 1-D (only the `flat`, `offset` and `empty` layouts: Array.slice is a view with
an offset, while step or reversed slicing copies through take), hold complex or bfloat16, or
export the buffer protocol or the NumPy interfaces itself. Its booleans are bit-packed (a slice
of them starts at a bit offset), and its buffer import cannot read byte booleans. Arrays are immutable (always read-only). pyarrow.Tensor is covered by
the pyarrow_tensor probe.
"""

import _probekit

NAME = "pyarrow"

pa = None

# Arrow's primitive types (no bfloat16 or complex type); booleans are bit-packed
DTYPES = _probekit.dtypes_except("bfloat16", "complex64", "complex128")


# How a reproducer spells pyarrow.Array (probes/README.md, "Reproducers"). pyarrow.array
# copies the list into Arrow-allocated memory, as build() does with the bytes; the buffer import
# types the exporter's memory with the dtype named, like consume().
REPRO = {
    "import": "import pyarrow as pa",
    "ns": "pa",
    "build": "pa.array(values, type={dtype})",
    "dtype_name": "{ns}.{dtype}()",
    "dtypes": {"bool": "pa.bool_()"},
    **_probekit.repro_views(slice=_probekit.column_slice_repro("pyarrow.Array")),
    "make_readonly": "# pyarrow arrays are immutable: x is read-only as it is",
    "consume": {
        "buffer": ("pa.Array.from_buffers({dtype}, (buf := pa.py_buffer({obj})).size // "
                   "{dtype}.byte_width, [None, buf])"),
        "arrow": "pa.array({obj})",
        "arrow_device": "pa.array({obj})",
        "arrow_stream": "pa.chunked_array({obj})",
    },
    "export": {"arrow_stream": "pa.chunked_array([x])"},
    "tolist": "{y}.to_pylist()",
    "dtype": _probekit.ARROW_DTYPE_REPRO,
    "shape": "(len({y}),)",
    "pointer": "{y}.buffers()[1].address + {y}.offset * {y}.type.byte_width",
    "compute": lambda dtype: ("pc.or_({y}, pa.scalar(False))" if dtype == "bool"
                              else "pc.multiply({y}, pa.scalar(1, {y}.type))"),
    "extra_imports": {"pc.": "import pyarrow.compute as pc"},
}


def load():
    global pa
    import pyarrow as _pa

    pa = _pa
    return _probekit.arrow_column_info(
        pa.__version__,
        column="pyarrow.Array",
        missing={
            "scalar": "pyarrow.Array is 1-D: a 0-d array does not exist",
            "strided": "pyarrow.Array has no strides: a step slice copies (take)",
            "reversed": "pyarrow.Array has no strides: a reversed slice copies (take)",
            "broadcast": "pyarrow.Array has no strides: no zero-stride broadcast",
        },
        exports=_probekit.exports("dlpack", "array", "arrow", "arrow_device",
                                  arrow_stream="pyarrow.chunked_array([x]).__arrow_c_stream__"),
        # pyarrow.py_buffer wraps the exporter's memory without a copy (documented as
        # zero-copy); Array.from_buffers then types it with the dtype the caller names. An
        # Array is immutable whatever the buffer under it allows.
        imports=_probekit.imports(
            {"buffer": "pyarrow.Array.from_buffers(type, n, [None, pyarrow.py_buffer(obj)])"},
            zero_copy=True, typed=False, readonly="always")
        # pyarrow.array moves the C data interface's structs and wraps the producer's buffers
        # (pyarrow's docs on the PyCapsule interface)
        | _probekit.imports({"arrow": "pyarrow.array(obj)", "arrow_device": "pyarrow.array(obj)",
                             "arrow_stream": "pyarrow.chunked_array(obj)"},
                            zero_copy=True, readonly="always"),
        nulls=True,
        compute=_probekit.compute_info(
            "pyarrow.compute.multiply(y, pyarrow.scalar(1, y.type)) (or_(y, False) for bool)",
            missing={"float16": "pyarrow.compute has no kernels for halffloat"}),
    )


def _type(dtype):
    """The Arrow type of a byte-per-element dtype (the buffer import's: Arrow's booleans are
    bits, so byte booleans have none)."""
    if dtype not in DTYPES or dtype == "bool":
        raise TypeError(f"pyarrow has no byte-per-element {dtype} type")
    return getattr(pa, dtype)()


def build(data, dtype, ops, readonly=False, valid=None):
    if dtype not in DTYPES:
        raise TypeError(f"pyarrow has no {dtype} type")
    return _probekit.column_slice(_probekit.pyarrow_array(pa, data, dtype, valid), ops, len,
                                  "pyarrow.Array")


def describe(x):
    return _probekit.pyarrow_description(pa, x)


def export(x, protocol):
    # an Array offers no stream itself: a ChunkedArray of it, one chunk, does
    return pa.chunked_array([x]) if protocol == "arrow_stream" else x


def consume(obj, protocol, dtype):
    if protocol == "arrow_stream":
        return pa.chunked_array(obj)
    if protocol in ("arrow", "arrow_device"):
        return pa.array(obj)
    buf = pa.py_buffer(obj)
    return pa.Array.from_buffers(_type(dtype), buf.size // _probekit.ITEMSIZE[dtype], [None, buf])


def compute(y):
    # pyarrow's own compute functions; the 1 is a scalar of y's type, as a Python int would
    # make the integer kernels widen to int64
    import pyarrow.compute as pc

    if pa.types.is_boolean(y.type):  # a stream's bit-packed booleans: the logical identity
        return pc.or_(y, pa.scalar(False))
    return pc.multiply(y, pa.scalar(1, y.type))
