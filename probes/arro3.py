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
    )


def build(data, dtype, ops, readonly=False):
    if dtype not in DTYPES:
        raise TypeError(f"arro3 has no {dtype} type")
    x = a3.Array.from_numpy(_probekit.numpy_from_bytes(np, data, dtype))
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
    values = x.to_numpy()
    return {"bytes": values.tobytes(), "shape": shape,
            "dtype": _probekit.dtype_name(values.dtype), "readonly": True,
            "device": list(_probekit.CPU)}


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
