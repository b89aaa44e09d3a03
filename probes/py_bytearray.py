"""Python bytearray: a mutable, 1-D buffer of unsigned bytes (format "B").

Cannot: hold any dtype but uint8, any shape but 1-D (only the `flat` and `empty` layouts:
slicing copies),
or be made read-only. No pointer API: describe() hands over the bytearray itself as a buffer.
Importing a buffer with bytearray(obj) copies the raw bytes in C order (untyped).
"""

import _probekit

NAME = "py_bytearray"

# How a reproducer spells bytearray (probes/README.md, "Reproducers"): the kit's byte string's;
# a bytearray cannot be made read-only.
REPRO = _probekit.byte_string_repro(bytearray, immutable=False)


def load():
    return _probekit.byte_string_info(bytearray, immutable=False)


def build(data, dtype, ops, readonly=False):
    return _probekit.byte_string_build(bytearray, data, dtype, ops)


def describe(x):
    return _probekit.buffer_description(x, "uint8", False)


def consume(obj, protocol, dtype):
    return bytearray(obj)
