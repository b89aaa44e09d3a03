"""The other half of order_first.py: a library imported without trouble, which order_first
cannot follow. It exchanges over DLPack only, so a worker can hold it alone; and its import of
int8 kills the worker, so that the next worker starts fresh and imports this library first."""

import os
import signal

import _probekit

np = None


def load():
    global np
    import numpy as _np

    np = _np
    return {
        "version": "1.0",
        "devices": ["cpu"],
        "dtypes": ["int8", "float32"],
        "layouts": ["flat"],
        "notes": {},
        "readonly": False,
        "exports": {"dlpack": {"call": "x.__dlpack__"}},
        "imports": {"dlpack": {"call": "numpy.from_dlpack(obj)", "zero_copy": True,
                               "typed": True, "readonly": True}},
    }


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops)


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype):
    if dtype == "int8":
        os.kill(os.getpid(), signal.SIGSEGV)
    return np.from_dlpack(obj)
