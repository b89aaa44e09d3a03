"""Python bytes: an immutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, or any shape but 1-D, so of the layouts only `flat` and
`empty` exist (slicing bytes copies). It has no pointer API: describe() hands over the bytes object itself as
a buffer. Importing a buffer with bytes(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytes"

# How a reproducer spells bytes (probes/README.md, "Reproducers"): the kit's byte string's.
REPRO = _probekit.byte_string_repro(bytes, immutable=True)


def load():
    return _probekit.byte_string_info(bytes, immutable=True)


def build(data, dtype, ops, readonly=False):
    return _probekit.byte_string_build(bytes, data, dtype, ops)


def describe(x):
    return _probekit.buffer_description(x, "uint8", True)


def consume(obj, protocol, dtype):
    return bytes(obj)
