"""The other half of order_first.py: a library imported without trouble, which order_first
cannot follow. It exchanges over DLPack only, so a worker can hold it alone; and its import of
int8 kills the worker, so that the next worker starts fresh and imports this library first."""

import os
import signal

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    return _testkit.load_numpy_dlpack(
        "x.__dlpack__",
        version="1.0",
        dtypes=["int8", "float32"],
        layouts=["flat"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "int8":
        os.kill(os.getpid(), signal.SIGSEGV)
    return _testkit.np.from_dlpack(obj)
