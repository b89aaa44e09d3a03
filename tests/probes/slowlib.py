"""A correct library that takes a quarter of a second per import, for the tests that
interrupt a run in the middle (tests/integration/test_supervisor.py).

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import time

import _probekit

np = None


def load():
    global np
    import numpy as _np

    np = _np
    return {
        "version": "0.0.1",
        "devices": ["cpu"],
        "dtypes": ["int8", "int16", "int32", "int64", "uint8", "float32", "float64"],
        "layouts": ["contiguous", "flat", "strided"],
        "notes": {},
        "readonly": False,
        "exports": {"dlpack": {"call": "numpy.ndarray.__dlpack__"}},
        "imports": {"dlpack": {"call": "numpy.from_dlpack(obj)", "zero_copy": True,
                               "typed": True, "readonly": True}},
    }


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops)


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype):
    time.sleep(0.25)
    return np.from_dlpack(obj)
