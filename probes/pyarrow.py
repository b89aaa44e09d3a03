"""PyArrow arrays (pyarrow.Array of a primitive type, no nulls).

Cannot: be anything but 1-D (only the `flat`, `offset` and `empty` layouts: Array.slice is a view with
an offset, while step or reversed slicing copies through take), hold bool as a byte per element
(Arrow booleans are bit-packed), complex or bfloat16, or export the buffer protocol or the
NumPy interfaces itself. Arrays are immutable (always read-only). pyarrow.Tensor is covered by
the pyarrow_tensor probe.
"""

import _probekit

NAME = "pyarrow"

pa = None

# pyarrow's own names (str(type)) for the ones that differ from the interface's
_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}

# Arrow's primitive types of a byte or more per element: its booleans are bit-packed, and it
# has no bfloat16 or complex type
DTYPES = _probekit.dtypes_except("bool", "bfloat16", "complex64", "complex128")


def _repro_slice(triples):
    """The reproducer's line for build()'s one view: Array.slice, offset and length."""
    ((start, stop, step),) = triples
    if step not in (None, 1) or start is None or stop is None or not 0 <= start <= stop:
        raise NotImplementedError(f"pyarrow.Array cannot express slice {triples} as a view")
    return f"x = x.slice({start}, {stop - start})"


# How a reproducer spells pyarrow.Array (probes/README.md, "Reproducers"). pyarrow.array
# copies the list into Arrow-allocated memory, as build() does with the bytes; the buffer import
# types the exporter's memory with the dtype named, like consume().
REPRO = {
    "import": "import pyarrow as pa",
    "ns": "pa",
    "build": "pa.array(values, type={dtype})",
    "dtype_name": "{ns}.{dtype}()",
    "reshape": None,
    "permute": None,
    "slice": _repro_slice,
    "broadcast": None,
    "make_readonly": "# pyarrow arrays are immutable: x is read-only as it is",
    "consume": {
        "buffer": ("pa.Array.from_buffers({dtype}, (buf := pa.py_buffer({obj})).size // "
                   "{dtype}.byte_width, [None, buf])"),
    },
    "tolist": "{y}.to_pylist()",
    "dtype": ('{{"halffloat": "float16", "float": "float32", "double": "float64"}}'
              ".get(str({y}.type), str({y}.type))"),
    "shape": "(len({y}),)",
    "pointer": "{y}.buffers()[1].address + {y}.offset * {y}.type.byte_width",
}


def load():
    global pa
    import pyarrow as _pa

    pa = _pa
    one_d = "pyarrow.Array is 1-D: no reshape"
    return {
        "version": pa.__version__,
        "devices": ["cpu"],
        "dtypes": list(DTYPES),
        "layouts": ["flat", "offset", "empty"],
        "notes": {
            "bool": "Arrow booleans are bit-packed, not a byte per element",
            "bfloat16": "Arrow has no bfloat16 type",
            "complex64": "Arrow has no complex type",
            "complex128": "Arrow has no complex type",
            "contiguous": one_d,
            "fortran": one_d,
            "transposed": one_d,
            "unit_dims": one_d,
            "scalar": "pyarrow.Array is 1-D: a 0-d array does not exist",
            "strided": "pyarrow.Array has no strides: a step slice copies (take)",
            "reversed": "pyarrow.Array has no strides: a reversed slice copies (take)",
            "broadcast": "pyarrow.Array has no strides: no zero-stride broadcast",
        },
        "readonly": True,
        "exports": {
            "dlpack": {"call": "x.__dlpack__"},
            "array": {"call": "x.__array__"},
        },
        "imports": {
            # pyarrow.py_buffer wraps the exporter's memory without a copy (documented as
            # zero-copy); Array.from_buffers then types it with the dtype the caller names.
            "buffer": {
                "call": "pyarrow.Array.from_buffers(type, n, [None, pyarrow.py_buffer(obj)])",
                "zero_copy": True,
                "typed": False,
                # an Array is immutable whatever the buffer under it allows
                "readonly": "always",
            },
        },
    }


def _type(dtype):
    if dtype not in DTYPES:
        raise TypeError(f"pyarrow has no byte-per-element {dtype} type")
    return getattr(pa, dtype)()


def build(data, dtype, ops, readonly=False):
    # allocate_buffer gives Arrow-owned (64-byte aligned) memory to copy the data into
    buf = pa.allocate_buffer(len(data))
    memoryview(buf).cast("B")[:] = data
    n = len(data) // _probekit.ITEMSIZE[dtype]
    x = pa.Array.from_buffers(_type(dtype), n, [None, buf])
    for name, arg in ops:
        if name != "slice" or len(arg) != 1:
            raise NotImplementedError(f"pyarrow.Array cannot express {name} {arg} as a view")
        start, stop, step = slice(*arg[0]).indices(len(x))
        if step != 1:
            raise NotImplementedError(f"pyarrow.Array cannot slice with step {step} as a view")
        x = x.slice(start, max(stop - start, 0))
    return x


def describe(x):
    dtype = _NAMES.get(str(x.type), str(x.type))
    data = x.buffers()[1]
    address = 0 if data is None else data.address + x.offset * x.type.byte_width
    return _probekit.pointer_description(address, [len(x)], None, dtype, True)


def consume(obj, protocol, dtype):
    buf = pa.py_buffer(obj)
    return pa.Array.from_buffers(_type(dtype), buf.size // _probekit.ITEMSIZE[dtype], [None, buf])
