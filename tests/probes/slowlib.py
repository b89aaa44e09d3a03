"""A correct library that takes a quarter of a second per import, for the tests that
interrupt a run in the middle (tests/integration/test_supervisor.py).

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""


import _probekit
import time

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    return _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__",
        dtypes=["int8", "int16", "int32", "int64", "uint8", "float32", "float64"],
        layouts=["contiguous", "flat", "strided"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    time.sleep(0.25)
    return _testkit.np.from_dlpack(obj)
