"""A test library with a warm() (probes/README.md), for tests/integration/test_supervisor.py
(check_warm): warm() must run once in each process that loads the probe, right after load(),
and in no process copied from one (discovery's worker's copies, case children), and an
exception in it must change no outcome. It is NumPy underneath, over DLPack. load(), warm() and
build() each append "<what> <pid>" to the file IC_TEST_WARM_LOG names (when set); with
IC_TEST_WARM_RAISE=1, warm() raises after logging.

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import os

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def _log(what):
    _testkit.log_event("IC_TEST_WARM_LOG", what)


def load():
    _log("load")
    return _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__", dtypes=["float32", "float64", "int32", "uint8"],
        layouts=["contiguous", "flat", "strided", "scalar"])


def warm():
    _log("warm")
    if os.environ.get("IC_TEST_WARM_RAISE") == "1":
        raise RuntimeError("warm() failed on purpose")
    (_testkit.np.arange(4) * 1).sum()


def build(data, dtype, ops, readonly=False):
    _log("build")
    return _testkit.build(data, dtype, ops, readonly)


describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
