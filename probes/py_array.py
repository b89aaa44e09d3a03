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


def _repro_build(dtype, ops, readonly):
    # build(): an empty array of the typecode, then frombytes of the packed values
    if dtype not in _TYPECODES:
        raise NotImplementedError(f"array.array has no typecode for {dtype}")
    if ops or readonly:
        raise NotImplementedError(f"array.array cannot express {ops} (read-only: {readonly})")
    code = _TYPECODES[dtype]
    return [f'x = array.array("{code}")',
            f'x.frombytes(struct.pack("%d{code}" % len(values), *values))']


# An untyped import holds the exported bytes; the script reads them back as the elements of
# the export, `obj` in the script (its native format and shape), which is how interopcheck
# compares them: complex formats as (real, imaginary) pairs, MLX's "bfloat16" widened to
# float32; bytes of another size stay raw.
_UNTYPED_TOLIST = (
    "(lambda b, m, f: list(b) if len(b) != m.nbytes else [] if not b else "
    "(lambda c, w, d: c(c, w, d))(lambda c, w, d: [c(c, e, d - 1) for e in w] if d else "
    "complex(*w), memoryview(b).cast(f[1], [*m.shape, 2]).tolist(), m.ndim) "
    'if f in ("Zf", "Zd") else memoryview(b"".join((b"\\0\\0" + b[i:i + 2], b[i:i + 2] + '
    'b"\\0\\0")[sys.byteorder == "big"] for i in range(0, len(b), 2))).cast("f", m.shape)'
    '.tolist() if f == "bfloat16" else memoryview(b).cast(f, m.shape).tolist())'
    "(bytes({y}), (_m := memoryview(obj)), "
    '_m.format.lstrip("@=" + "<>"[sys.byteorder == "big"]))'
)

# How a reproducer spells array.array (probes/README.md, "Reproducers"). {dtype} is the
# typecode; the import is consume()'s two calls in one expression (frombytes returns None).
# The dtype is named from the typecode's kind and the itemsize, as describe() does.
REPRO = {
    "import": "import array\nimport struct",
    "build": _repro_build,
    "dtypes": {d: f'"{code}"' for d, code in _TYPECODES.items()},
    "consume": {
        "buffer": '(_a := array.array({dtype})).frombytes(memoryview({obj}).cast("B")) or _a',
    },
    "tolist": _UNTYPED_TOLIST,
    "dtype": ('("uint" if {y}.typecode in "BHILQ" else "float" if {y}.typecode in "fd" '
              'else "int") + str(8 * {y}.itemsize)'),
    "shape": "(len({y}),)",
    "readonly": "memoryview({y}).readonly",
    "pointer": "{y}.buffer_info()[0]",
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
