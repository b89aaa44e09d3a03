"""arro3: a small Arrow library in Rust (arro3-core), with Arrow arrays as its Python objects.

An arro3 Array is one 1-D column (only the `flat`, `offset` and `empty` layouts: slice() is a
view), of Arrow's primitive types (booleans bit-packed; no bfloat16 or complex), and
immutable. It exports the Arrow PyCapsule interface (__arrow_c_array__) and __array__, and
imports with Array.from_arrow(obj) (the C data interface, keeping the producer's buffers),
ChunkedArray.from_arrow(obj) (streams) and Array.from_buffer(obj) (the buffer protocol, typed by
the buffer's format; an N-D buffer becomes nested fixed-size lists, one per dimension). arro3
has no pointer API (Array.buffer() is not implemented for primitive arrays), so describe() hands
over the elements' bytes: whether an import shares memory is then known from the export only.
Its one kernel is take(), a gather, which compute() runs.
"""

import _probekit

NAME = "arro3"

a3 = None
np = None

# Arrow's primitive types (booleans bit-packed)
DTYPES = _probekit.dtypes_except("bfloat16", "complex64", "complex128")


REPRO = {
    "import": "import arro3.core as a3\nimport numpy as np",
    "ns": "np",
    "build": "a3.Array.from_numpy(np.array(values, dtype={dtype}))",
    # with None for each null: the Python-object constructor, which has no float16 of its own
    "build_nulls": {
        "float16": "a3.Array(values, a3.DataType.float32()).cast(a3.DataType.float16())",
        "default": "a3.Array(values, a3.Array.from_numpy(np.zeros(0, dtype={dtype})).type)"},
    **_probekit.NUMPY_DTYPES_REPRO,
    **_probekit.repro_views(slice=_probekit.column_slice_repro("an arro3 Array")),
    "make_readonly": "# arro3 arrays are immutable: x is read-only as it is",
    "export": {"arrow_stream": "a3.ChunkedArray([x])"},
    "consume": {"arrow": "a3.Array.from_arrow({obj})", "buffer": "a3.Array.from_buffer({obj})",
                "arrow_stream": "a3.ChunkedArray.from_arrow({obj})"},
    "tolist": "{y}.to_pylist()",
    "dtype": "str({y}.to_numpy().dtype)",
    "shape": "(len({y}),)",
    "compute": "{y}.take(a3.Array.from_numpy(np.arange(len({y}), dtype=np.uint32)))",
}


def load():
    global a3, np
    import importlib.metadata

    import arro3.core
    import numpy

    a3, np = arro3.core, numpy
    return _probekit.arrow_column_info(
        importlib.metadata.version("arro3-core"),
        column="an arro3 Array",
        exports=_probekit.exports("arrow", "array",
                                  arrow_stream="arro3.core.ChunkedArray([x]).__arrow_c_stream__"),
        # from_arrow keeps the producer's buffers (arro3's docs: zero-copy import through the
        # Arrow PyCapsule interface); from_buffer wraps the exporter's memory, typed by its
        # format, and refuses formats Arrow has no type for
        imports=_probekit.imports({"arrow": "arro3.core.Array.from_arrow(obj)",
                                   "buffer": "arro3.core.Array.from_buffer(obj)",
                                   "arrow_stream": "arro3.core.ChunkedArray.from_arrow(obj)"},
                                  zero_copy=True, readonly="always"),
        compute=_probekit.compute_info("y.take(indices 0..n-1)"),
        nulls=True,
    )


def build(data, dtype, ops, readonly=False, valid=None):
    if dtype not in DTYPES:
        raise TypeError(f"arro3 has no {dtype} type")
    values = _probekit.numpy_from_bytes(np, data, dtype)
    x = a3.Array.from_numpy(values)
    if valid is not None:
        # the nulls variants: from_numpy takes no mask, the Python-object constructor takes
        # None for a null (arro3 then fills the slot itself)
        items = [v if ok else None for v, ok in zip(values.tolist(), valid)]
        if dtype == "float16":  # no float16 constructor: float32 holds each value exactly
            x = a3.Array(items, a3.DataType.float32()).cast(x.type)
        else:
            x = a3.Array(items, x.type)
    return _probekit.column_slice(x, ops, len, "an arro3 Array")


def _array(x):
    """One Array of x: a stream's import is a ChunkedArray (several chunks are joined)."""
    if isinstance(x, a3.ChunkedArray):
        chunks = x.chunks
        if len(chunks) == 1:
            return chunks[0]
        return a3.Array.from_numpy(x.to_numpy())
    return x


def describe(x):
    x = _array(x)
    # An N-D import (from_buffer) is nested fixed-size lists: each level one dimension; the
    # innermost primitive array holds the elements in C order. No pointer API: the elements go
    # as bytes, through arro3's own to_numpy().
    shape = [len(x)]
    while a3.DataType.is_fixed_size_list(x.type):
        shape.append(x.type.list_size)
        x = a3.list_flatten(x)
    if x.null_count:
        # to_numpy() refuses nulls: which elements are null comes from to_pylist(), and a
        # null's slot goes over as a zero (only the valid elements are compared)
        items = x.to_pylist()
        validity = bytes(v is not None for v in items)
        dtype = x.slice(0, 0).to_numpy().dtype  # an empty slice has no nulls to refuse
        values = np.array([0 if v is None else v for v in items], dtype=dtype)
    else:
        validity, values = None, x.to_numpy()
    return {"bytes": values.tobytes(), "shape": shape,
            "dtype": _probekit.dtype_name(values.dtype), "readonly": True,
            "device": list(_probekit.CPU), "validity": validity}


def export(x, protocol):
    # an Array offers no stream itself: a ChunkedArray of it, one chunk, does
    return a3.ChunkedArray([x]) if protocol == "arrow_stream" else x


def consume(obj, protocol, dtype):
    if protocol == "arrow_stream":
        return a3.ChunkedArray.from_arrow(obj)
    if protocol == "buffer":
        return a3.Array.from_buffer(obj)
    return a3.Array.from_arrow(obj)


def compute(y):
    # take() gathers every element into new buffers: arro3's own kernel
    y = _array(y)
    return y.take(a3.Array.from_numpy(np.arange(len(y), dtype=np.uint32)))
