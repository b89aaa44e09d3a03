"""Python bytearray: a mutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, any shape but 1-D (only the `flat` and `empty` layouts:
slicing copies),
or be made read-only. No pointer API: describe() hands over the bytearray itself as a buffer.
Importing a buffer with bytearray(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytearray"


def _repro_build(dtype, ops, readonly):
    # build() copies the driver's bytes into a bytearray; the values are uint8, so
    # bytearray(values) is the same object.
    if dtype != "uint8" or ops:
        raise NotImplementedError(f"bytearray cannot express {dtype} {ops}")
    if readonly:
        raise NotImplementedError("a bytearray cannot be made read-only")
    return ["x = bytearray(values)"]


# How a reproducer spells bytearray (probes/README.md, "Reproducers"): builtins only. The
# import is untyped (flat bytes), so interopcheck checks neither its dtype nor its shape: no
# `dtype`, and its bytes are read back as the export's elements. No pointer API, as in
# describe().
REPRO = {
    "import": "",
    "build": _repro_build,
    "consume": {"buffer": "bytearray({obj})"},
    "elements": "export",
    "shape": "(len({y}),)",
    "readonly": "memoryview({y}).readonly",
}


def load():
    import sys

    dtypes, layouts = ["uint8"], ["flat", "empty"]
    one_d = "bytearray is a 1-D buffer of bytes; slicing copies and there is no reshape"
    return {
        "version": sys.version.split()[0],
        "devices": ["cpu"],
        "dtypes": dtypes,
        "layouts": layouts,
        "notes": _probekit.missing_notes(_probekit.DTYPES, dtypes,
                                         "bytearray has the format 'B' only")
        | _probekit.missing_notes(_probekit.LAYOUTS, layouts, one_d),
        "readonly": False,
        "exports": {"buffer": {"call": "memoryview(x)"}},
        "imports": {
            "buffer": {"call": "bytearray(obj)", "zero_copy": False, "typed": False,
                       "readonly": False}
        },
    }


def build(data, dtype, ops, readonly=False):
    if dtype != "uint8" or ops:
        raise NotImplementedError(f"bytearray cannot express {dtype} {ops}")
    return bytearray(data)


def describe(x):
    return _probekit.buffer_description(x, "uint8", False)


def consume(obj, protocol, dtype):
    return bytearray(obj)
