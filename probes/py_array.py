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

# array.array's typecodes are the kit's PEP 3118 formats (its 'q'/'Q' for the 64-bit
# integers: 'l'/'L' are 4 bytes on some platforms), less the two it lacks: '?' and 'e'
_TYPECODES = {d: code for d, code in _probekit.FORMATS.items() if d not in ("bool", "float16")}


def _repro_build(dtype, ops, readonly):
    # build(): an empty array of the typecode, then frombytes of the packed values
    if dtype not in _TYPECODES:
        raise NotImplementedError(f"array.array has no typecode for {dtype}")
    if ops or readonly:
        raise NotImplementedError(f"array.array cannot express {ops} (read-only: {readonly})")
    code = _TYPECODES[dtype]
    return [f'x = array.array("{code}")',
            f'x.frombytes(struct.pack("%d{code}" % len(values), *values))']


# How a reproducer spells array.array (probes/README.md, "Reproducers"). {dtype} is the
# typecode; the import is consume()'s two calls in one expression (frombytes returns None),
# untyped, so its bytes are read back as the export's elements. The dtype is named from the
# typecode's kind and the itemsize, as describe() does.
REPRO = {
    "import": "import array\nimport struct",
    "build": _repro_build,
    "dtypes": {d: f'"{code}"' for d, code in _TYPECODES.items()},
    "consume": {
        "buffer": '(_a := array.array({dtype})).frombytes(memoryview({obj}).cast("B")) or _a',
    },
    "elements": "export",
    "dtype": ('("uint" if {y}.typecode in "BHILQ" else "float" if {y}.typecode in "fd" '
              'else "int") + str(8 * {y}.itemsize)'),
    "shape": "(len({y}),)",
    "readonly": "memoryview({y}).readonly",
    "pointer": "{y}.buffer_info()[0]",
}


def load():
    global array
    import array as _array

    array = _array
    return _probekit.load_info(
        _probekit.PYTHON_VERSION,
        dtypes=_TYPECODES,
        dtype_note="array.array has no typecode for it",
        layouts=["flat", "empty"],
        layout_note="array.array is 1-D; slicing copies and there is no reshape",
        exports=_probekit.exports("buffer"),
        imports=_probekit.imports(
            {"buffer": "array.array(typecode).frombytes(memoryview(obj).cast('B'))"},
            zero_copy=False, typed=False, readonly=False),
    )


def build(data, dtype, ops, readonly=False):
    if ops:
        raise NotImplementedError(f"array.array cannot express {ops}")
    x = array.array(_TYPECODES[dtype])
    x.frombytes(data)
    return x


def describe(x):
    address, length = x.buffer_info()
    # typecodes such as 'i' and 'l' have platform sizes: named by kind and itemsize (the
    # character typecodes 'u' and 'w' as they are)
    dtype = _probekit.format_dtype(x.typecode, x.itemsize) or x.typecode
    return _probekit.pointer_description(address, [length], None, dtype, False)


def consume(obj, protocol, dtype):
    x = array.array(_TYPECODES[dtype])
    x.frombytes(memoryview(obj).cast("B"))
    return x
