"""Python memoryview over a bytearray: typed, N-d, with views for 1-D slicing.

memoryview.cast gives the dtype and the shape (including 0-d), and slicing its first dimension
(step, offset, negative step) is a view. Cannot: permute axes or broadcast (no fortran,
transposed, unit_dims or broadcast layout), or cast to complex or bfloat16 (cast accepts only
single-character native formats, and PEP 3118 has none for bfloat16). No pointer API: describe()
hands over the memoryview itself as a buffer.
"""

import sys

import _probekit

NAME = "py_memoryview"


def _repro_build(dtype, ops, readonly):
    """The reproducer's lines making x as build() does: the values packed with struct into a
    bytearray, cast to the dtype's format, then reshaped by casts and sliced."""
    if dtype not in _probekit.FORMATS:
        raise NotImplementedError(f"memoryview.cast has no format for {dtype}")
    fmt = _probekit.FORMATS[dtype]
    lines = [f'data = struct.pack("%d{fmt}" % len(values), *values)',
             f'x = memoryview(bytearray(data)).cast("{fmt}")']
    for name, arg in ops:
        if name == "reshape":
            lines.append(f'x = x.cast("B").cast("{fmt}", {list(arg)!r})')
        elif name == "slice" and len(arg) == 1:
            lines.append(f"x = x[{_probekit.slice_text(arg)}]")
        else:
            raise NotImplementedError(f"memoryview cannot express {name} {arg} as a view")
    if readonly:
        lines.append("x = x.toreadonly()")
    return lines


# How a reproducer spells memoryview (probes/README.md, "Reproducers"). It has no tolist() for
# every format it imports (not "<f", complex or MLX's "bfloat16"): its elements are read as a
# buffer's. The dtype is named from the format's kind and the itemsize, as describe() does.
REPRO = {
    "import": "import struct",
    "build": _repro_build,
    "consume": {"buffer": "memoryview({obj})"},
    "elements": "buffer",
    "dtype": ("(lambda f, bits: 'bool' if f == '?' else 'int' + bits if f in tuple('bhilq') "
              "else 'uint' + bits if f in tuple('BHILQ') else 'float' + bits "
              "if f in tuple('efd') else 'complex' + bits if f in ('Zf', 'Zd') else {y}.format)"
              '({y}.format[1:] if {y}.format[:1] in ("@", "=", "<>"[sys.byteorder == "big"]) '
              "else {y}.format, str(8 * {y}.itemsize))"),
    "readonly": "{y}.readonly",
    "read": "{y}[{index}]",
    "write": "{y}[{index}] = {value}",
}


def load():
    return _probekit.load_info(
        _probekit.PYTHON_VERSION,
        dtypes=_probekit.FORMATS,
        dtype_note="memoryview.cast accepts only single-character native formats",
        layouts=["contiguous", "flat", "strided", "reversed", "offset", "scalar", "empty"],
        layout_note="memoryview cannot permute or broadcast axes",
        readonly=True,
        exports=_probekit.exports("buffer"),
        imports=_probekit.imports({"buffer": "memoryview(obj)"}, zero_copy=True, readonly=True),
    )


def _slice(y, triples):
    if len(triples) != 1:
        raise NotImplementedError("memoryview slices only its first dimension")
    return y[slice(*triples[0])]


def build(data, dtype, ops, readonly=False):
    fmt = _probekit.FORMATS[dtype]
    x = _probekit.apply_ops(
        memoryview(bytearray(data)).cast(fmt),
        ops,
        # cast needs a C-contiguous view, which is what the layouts reshape
        reshape=lambda y, shape: y.cast("B").cast(fmt, list(shape)),
        permute=None,
        slice=_slice,
        broadcast=None,
    )
    return x.toreadonly() if readonly else x


def _dtype(x):
    # Exporters spell the same dtype differently ('l' or 'q', '<d' or '=d'), so the name comes
    # from the kind of the format character and the itemsize.
    fmt = x.format
    if fmt[:1] in ("@", "=", "<" if sys.byteorder == "little" else ">"):
        fmt = fmt[1:]
    return _probekit.format_dtype(fmt, x.itemsize) or x.format


def describe(x):
    return _probekit.buffer_description(x, _dtype(x), x.readonly)


def consume(obj, protocol, dtype):
    return memoryview(obj)


# A memoryview indexes with a tuple and gives Python scalars; formats it cannot unpack (the
# complex ones, float16 before Python 3.12) raise, and the check says that direction was not
# made.
def read(x, index):
    return x[index]


def write(x, index, value):
    x[index] = value
