"""A test library that takes the SIGSEGV handler from faulthandler, as paddle does some time
after its import (its own handler hides the Python stack), for
tests/integration/test_supervisor.py.

It consumes NumPy's DLPack exports as NumPy does. Importing a float32 array puts the default
action back for SIGSEGV, in place of faulthandler's handler; importing a float64 array kills
the process with SIGSEGV. The worker must install faulthandler's handlers again before the
float64 case, or that crash leaves no Python stack and cannot be charged to the consumer. With
IC_TEST_SIGTAKER_LOG set, each of the two is logged as "take PID" or "crash PID".
"""

import ctypes
import os
import signal

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def _log(what):
    _testkit.log_event("IC_TEST_SIGTAKER_LOG", what)


def load():
    return _testkit.load_numpy_dlpack(
        "numpy's __dlpack__",
        dtypes=["float32", "float64"],
        layouts=["contiguous"],
        notes={"bool": "sigtaker has only the dtypes of its test plan"})


def build(data, dtype, ops, readonly=False):
    return _testkit.numpy_array(data, dtype, ops)


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "float32":
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal(signal.SIGSEGV, None)  # SIG_DFL
        _log("take")
    if dtype == "float64":
        _log("crash")
        os.kill(os.getpid(), signal.SIGSEGV)
    return _testkit.np.from_dlpack(obj)
