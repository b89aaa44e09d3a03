"""A correct library that takes a second and a half to import (IC_TEST_SLOW_IMPORT_S seconds
when set), for the test of the cases that run while discovery imports
(tests/integration/test_supervisor.py, check_early and check_early_compiles): imported after the
others, it leaves them that long to run their pairs. With IC_TEST_JIT_LOG set, load() appends
the time it ends to that file.

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import os
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    time.sleep(float(os.environ.get("IC_TEST_SLOW_IMPORT_S", "1.5")))
    log = os.environ.get("IC_TEST_JIT_LOG")  # check_early_compiles: when discovery's import ends
    if log:
        with open(log, "a") as f:
            f.write(f"loaded {time.time():.6f}\n")
    return _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__", dtypes=["float32", "float64", "complex64"],
        layouts=["contiguous", "scalar"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
