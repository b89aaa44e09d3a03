"""Python bytes: an immutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, or any shape but 1-D, so of the layouts only `flat` and
`empty` exist (slicing bytes copies). It has no pointer API: describe() hands over the bytes object itself as
a buffer. Importing a buffer with bytes(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytes"


def _repro_build(dtype, ops, readonly):
    # build() copies the driver's bytes into a new bytes object; the values are uint8, so
    # bytes(values) is the same object. bytes are immutable: x is read-only as it is.
    if dtype != "uint8" or ops:
        raise NotImplementedError(f"bytes cannot express {dtype} {ops}")
    return ["x = bytes(values)"]


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

# How a reproducer spells bytes (probes/README.md, "Reproducers"): builtins only. The import
# is untyped (flat bytes), so interopcheck checks neither its dtype nor its shape: no `dtype`.
REPRO = {
    "import": "",
    "build": _repro_build,
    "consume": {"buffer": "bytes({obj})"},
    "tolist": _UNTYPED_TOLIST,
    "shape": "(len({y}),)",
    "readonly": "memoryview({y}).readonly",
}


def load():
    import sys

    one_d = "bytes is a 1-D buffer of bytes; slicing copies and there is no reshape"
    return {
        "version": sys.version.split()[0],
        "devices": ["cpu"],
        "dtypes": ["uint8"],
        "layouts": ["flat", "empty"],
        "notes": {d: "bytes has the format 'B' only" for d in _probekit.DTYPES if d != "uint8"}
        | {layout: one_d for layout in _probekit.LAYOUTS if layout not in ("flat", "empty")},
        "readonly": True,
        "exports": {"buffer": {"call": "memoryview(x)"}},
        "imports": {
            "buffer": {"call": "bytes(obj)", "zero_copy": False, "typed": False, "readonly": True}
        },
    }


def build(data, dtype, ops, readonly=False):
    if dtype != "uint8" or ops:
        raise NotImplementedError(f"bytes cannot express {dtype} {ops}")
    # bytes(memoryview) copies, so the object does not alias the driver's data
    return bytes(memoryview(data))


def describe(x):
    return _probekit.buffer_description(x, "uint8", True)


def export(x, protocol):
    return x


def consume(obj, protocol, dtype):
    return bytes(obj)
