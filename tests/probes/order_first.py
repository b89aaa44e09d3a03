"""With order_second.py: two libraries that only coexist in one import order, as PaddlePaddle
and TensorFlow do (paddle imported after tensorflow kills the process). This one kills the
process when order_second was imported before it. Discovery imports them in catalog order and
sees no conflict; a worker that happens to import order_second first must learn the order at run
time and run the case again, losing nothing. Loaded only with --probe-dir tests/probes."""

import os
import signal
import sys

import _probekit

np = None


def load():
    global np
    if "interopcheck_probe_order_second" in sys.modules:
        os.kill(os.getpid(), signal.SIGSEGV)
    import numpy as _np

    np = _np
    return {
        "version": "1.0",
        "devices": ["cpu"],
        "dtypes": ["float32"],
        "layouts": ["flat"],
        "notes": {},
        "readonly": False,
        "exports": {"array_interface": {"call": "x.__array_interface__"}},
        "imports": {"array_interface": {"call": "numpy.asarray(obj)", "zero_copy": True,
                                        "typed": True, "readonly": True}},
    }


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops)


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype):
    return np.asarray(obj)
