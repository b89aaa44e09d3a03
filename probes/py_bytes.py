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


# How a reproducer spells bytes (probes/README.md, "Reproducers"): builtins only. The import
# is untyped (flat bytes), so interopcheck checks neither its dtype nor its shape: no `dtype`,
# and its bytes are read back as the export's elements.
REPRO = {
    "import": "",
    "build": _repro_build,
    "consume": {"buffer": "bytes({obj})"},
    "elements": "export",
    "shape": "(len({y}),)",
    "readonly": "memoryview({y}).readonly",
}


def load():
    import sys

    dtypes, layouts = ["uint8"], ["flat", "empty"]
    one_d = "bytes is a 1-D buffer of bytes; slicing copies and there is no reshape"
    return {
        "version": sys.version.split()[0],
        "devices": ["cpu"],
        "dtypes": dtypes,
        "layouts": layouts,
        "notes": _probekit.missing_notes(_probekit.DTYPES, dtypes, "bytes has the format 'B' only")
        | _probekit.missing_notes(_probekit.LAYOUTS, layouts, one_d),
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


def consume(obj, protocol, dtype):
    return bytes(obj)
