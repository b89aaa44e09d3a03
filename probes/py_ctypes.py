"""Python ctypes arrays: fixed-size C arrays; nested array types give N-d buffers.

A ctypes type's from_buffer() maps that type onto existing memory, which is how the probe makes
views: reshape is a nested array type over the same memory, a unit-step slice is an array type
at a byte offset, and the scalar layout is a simple type (a 0-d buffer). Cannot: step, reversed
or permuted views (ctypes arrays are always C-contiguous: no strided, reversed, fortran,
transposed, unit_dims or broadcast), float16, bfloat16 or complex (no ctypes types before Python
3.14), or read-only arrays. Buffer import with from_buffer is untyped (the caller's dtype) and
needs a writable, C-contiguous buffer.
"""

import ctypes

import _probekit

NAME = "py_ctypes"

_TYPES = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}
_NAMES = {t: d for d, t in _TYPES.items()}

LAYOUTS = ["contiguous", "flat", "offset", "scalar", "empty"]

# The reproducer's names of the element types (c_int32 and c_int are the same type; the script
# says which size it means).
_SPELLED = {d: "ctypes.c_" + {"float32": "float", "float64": "double"}.get(d, d) for d in _TYPES}


def _repro_build(dtype, ops, readonly):
    """The reproducer's lines making x as build() does: the values packed with struct, copied
    into a ctypes array, then array types laid over that memory with from_buffer."""
    if dtype not in _TYPES:
        raise NotImplementedError(f"ctypes has no type for {dtype}")
    if readonly:
        raise NotImplementedError("ctypes arrays cannot be made read-only")
    t, fmt = _SPELLED[dtype], _probekit.FORMATS[dtype]
    lines = [f'data = struct.pack("%d{fmt}" % len(values), *values)',
             f"x = ({t} * len(values)).from_buffer_copy(data)"]
    for name, arg in ops:
        if name == "reshape":
            # shape () gives the element type itself: a 0-d buffer
            nested = " * ".join([t] + [str(n) for n in reversed(arg)])
            lines.append(f"x = ({nested}).from_buffer(x)" if arg else f"x = {t}.from_buffer(x)")
        elif name == "slice" and len(arg) == 1 and arg[0][2] in (None, 1):
            start, stop = arg[0][0], arg[0][1]
            lines += [f"start, stop, _ = slice({start}, {stop}).indices(len(x))",
                      f"x = ({t} * max(stop - start, 0))"
                      f".from_buffer(x, start * ctypes.sizeof({t}))"]
        else:
            raise NotImplementedError(f"ctypes arrays cannot express {name} {arg} as a view")
    return lines


# How a reproducer spells ctypes arrays (probes/README.md, "Reproducers"). They have no
# read-only form; the buffer import is untyped, so dtype and shape are the ctypes array's own,
# and its bytes are read back as the export's elements.
REPRO = {
    "import": "import ctypes\nimport struct",
    "build": _repro_build,
    "dtypes": _SPELLED,
    "consume": {
        "buffer": ("({dtype} * ((_v := memoryview({obj})).nbytes // ctypes.sizeof({dtype})))"
                   ".from_buffer(_v)"),
    },
    "elements": "export",
    "dtype": ("{{" + ", ".join(f"{t}: {d!r}" for d, t in _SPELLED.items()) + "}}"
              ".get({y}._type_, str({y}._type_))"),
    "shape": "tuple(memoryview({y}).shape)",
    "readonly": "memoryview({y}).readonly",
    "pointer": "ctypes.addressof({y})",
    "read": "functools.reduce(lambda a, i: a[i], {index}, {y})",
    "write": "functools.reduce(lambda a, i: a[i], {index}[:-1], {y})[{index}[-1]] = {value}",
    "extra_imports": {"functools.": "import functools"},
}


def load():
    return _probekit.load_info(
        _probekit.PYTHON_VERSION,
        dtypes=_TYPES,
        dtype_note="ctypes has no type for it",
        layouts=LAYOUTS,
        layout_note="ctypes arrays are C-contiguous: no strides",
        exports=_probekit.exports("buffer"),
        imports=_probekit.imports({"buffer": "(c_type * n).from_buffer(memoryview(obj))"},
                                  zero_copy=True, typed=False, readonly=False),
    )


def _element_type(x):
    t = type(x)
    while issubclass(t, ctypes.Array):
        t = t._type_
    return t


def _reshape(x, shape):
    t = _element_type(x)
    for n in reversed(shape):
        t = t * n
    return t.from_buffer(x)


def _slice(x, triples):
    start, stop, step = slice(*triples[0]).indices(len(x))
    if len(triples) != 1 or step != 1:
        raise NotImplementedError("ctypes views need unit-step slices of the first dimension")
    t = _element_type(x)
    return (t * max(stop - start, 0)).from_buffer(x, start * ctypes.sizeof(t))


def build(data, dtype, ops, readonly=False):
    t = _TYPES[dtype]
    base = (t * (len(data) // ctypes.sizeof(t))).from_buffer_copy(data)
    return _probekit.apply_ops(base, ops, reshape=_reshape, slice=_slice, permute=None,
                               broadcast=None)


def describe(x):
    shape = []
    t = type(x)
    while issubclass(t, ctypes.Array):
        shape.append(t._length_)
        t = t._type_
    dtype = _NAMES.get(t, t.__name__)
    return _probekit.pointer_description(ctypes.addressof(x), shape, None, dtype, False)


def consume(obj, protocol, dtype):
    view = memoryview(obj)
    t = _TYPES[dtype]
    return (t * (view.nbytes // ctypes.sizeof(t))).from_buffer(view)


# ctypes arrays nest one dimension per level, and give Python scalars for their simple types.
def read(x, index):
    for i in index:
        x = x[i]
    return x


def write(x, index, value):
    for i in index[:-1]:
        x = x[i]
    x[index[-1]] = value
