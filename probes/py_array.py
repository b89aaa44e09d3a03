"""Python array.array: a mutable, 1-D, typed buffer.

Cannot: hold bool, float16, bfloat16 or complex (no such typecodes), any shape but 1-D (only
the `flat` and `empty` layouts: slicing copies), or be made read-only. array.frombytes copies raw bytes (the
dtype comes from the caller: untyped) and accepts only buffers of itemsize 1 ("a bytes-like
object is required" otherwise), so typed buffers go in through memoryview(obj).cast("B"), which
needs a C-contiguous buffer.
"""

import _probekit

NAME = "py_array"

array = None

# 'q'/'Q' rather than 'l'/'L': their size is fixed at 8 bytes on every platform
_TYPECODES = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint8": "B",
    "uint16": "H",
    "uint32": "I",
    "uint64": "Q",
    "float32": "f",
    "float64": "d",
}


def load():
    global array
    import array as _array
    import sys

    array = _array
    one_d = "array.array is 1-D; slicing copies and there is no reshape"
    return {
        "version": sys.version.split()[0],
        "devices": ["cpu"],
        "dtypes": [d for d in _probekit.DTYPES if d in _TYPECODES],
        "layouts": ["flat", "empty"],
        "notes": {d: "array.array has no typecode for it" for d in _probekit.DTYPES
                  if d not in _TYPECODES}
        | {layout: one_d for layout in _probekit.LAYOUTS if layout not in ("flat", "empty")},
        "readonly": False,
        "exports": {"buffer": {"call": "memoryview(x)"}},
        "imports": {
            "buffer": {
                "call": "array.array(typecode).frombytes(memoryview(obj).cast('B'))",
                "zero_copy": False,
                "typed": False,
                "readonly": False,
            }
        },
    }


def build(data, dtype, ops, readonly=False):
    if ops:
        raise NotImplementedError(f"array.array cannot express {ops}")
    x = array.array(_TYPECODES[dtype])
    x.frombytes(data)
    return x


def _dtype(x):
    # typecodes such as 'i' and 'l' have platform sizes: name them by kind and itemsize
    kind = "uint" if x.typecode in "BHILQ" else "float" if x.typecode in "fd" else "int"
    if x.typecode in "uw":
        return x.typecode
    return f"{kind}{8 * x.itemsize}"


def describe(x):
    address, length = x.buffer_info()
    return _probekit.pointer_description(address, [length], None, _dtype(x), False)


def export(x, protocol):
    return x


def consume(obj, protocol, dtype):
    x = array.array(_TYPECODES[dtype])
    x.frombytes(memoryview(obj).cast("B"))
    return x
