"""A test library that says its imports compile for each new shape and dtype ("compiles", as
JAX's probe does), for tests/integration/test_supervisor.py (check_early): its consumer cases
must not run while discovery imports, in a copy of discovery's worker, but in the run's
workers. It imports NumPy's DLPack exports as NumPy does, and each import appends the time it
was made to the file IC_TEST_JIT_LOG names (when set). With IC_TEST_JIT_COMPILES=0 it says
false, so that the test sees its cases run early otherwise.

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import os
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    info = _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__", dtypes=["float32", "float64", "complex64"],
        layouts=["contiguous", "scalar"])
    return info | {"compiles": os.environ.get("IC_TEST_JIT_COMPILES", "1") != "0"}


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    log = os.environ.get("IC_TEST_JIT_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"import {time.time():.6f}\n")
    return _testkit.np.from_dlpack(obj)
