"""A library that holds 600 MiB once imported, as a large library's code and data do, for
tests/integration/test_supervisor.py: with it loaded the template is large, as with --all's
libraries, and a crashing pair cheap to import gets a lean worker of its own (src/run/README.md).
Its arrays are NumPy's, exported and imported over DLPack as NumPy does.
Loaded only with --probe-dir tests/probes.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

_held = None  # the memory, written, so that it is resident


def load():
    global _held
    _held = b"\x01" * (600 << 20)
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32", "float64"],
                                      layouts=["contiguous", "scalar"])


build = _testkit.build
describe = _testkit.describe
consume = _testkit.consume
