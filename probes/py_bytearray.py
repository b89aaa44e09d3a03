"""Python bytearray: a mutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, any shape but 1-D (only the `flat` and `empty` layouts:
slicing copies),
or be made read-only. No pointer API: describe() hands over the bytearray itself as a buffer.
Importing a buffer with bytearray(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytearray"


def load():
    import sys

    one_d = "bytearray is a 1-D buffer of bytes; slicing copies and there is no reshape"
    return {
        "version": sys.version.split()[0],
        "devices": ["cpu"],
        "dtypes": ["uint8"],
        "layouts": ["flat", "empty"],
        "notes": {d: "bytearray has the format 'B' only" for d in _probekit.DTYPES if d != "uint8"}
        | {layout: one_d for layout in _probekit.LAYOUTS if layout not in ("flat", "empty")},
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


def export(x, protocol):
    return x


def consume(obj, protocol, dtype):
    return bytearray(obj)
