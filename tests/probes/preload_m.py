"""The library between preload_a and preload_z in catalog order (see preload_a.py). Loaded only
with --probe-dir tests/probes."""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    return _testkit.load_numpy_dlpack("x.__dlpack__", dtypes=["float32"], layouts=["flat"])


build, describe, consume = _testkit.build, _testkit.describe, _testkit.consume
