"""Python bytes: an immutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, or any shape but 1-D, so of the layouts only `flat` and
`empty` exist (slicing bytes copies). It has no pointer API: describe() hands over the bytes object itself as
a buffer. Importing a buffer with bytes(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytes"


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
