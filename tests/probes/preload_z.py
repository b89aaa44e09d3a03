"""The library whose module preload_a's import brings in (see preload_a.py). Its version says
whether preload_m was loaded before it: "before-m" or "after-m". Loaded only with --probe-dir
tests/probes."""

import sys

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    seen = "after-m" if "interopcheck_probe_preload_m" in sys.modules else "before-m"
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32"],
                                      layouts=["flat"], version=seen)


build = _testkit.build
describe = _testkit.describe
consume = _testkit.consume
