"""With preload_m.py and preload_z.py: the order discovery loads libraries in. This library's
import brings in preload_z's module, as SciPy-using libraries bring in NumPy; discovery, told so
by the worker, loads preload_z next, ahead of preload_m, which comes first in catalog order
(tests/integration/test_supervisor.py, check_preloaded). Loaded only with --probe-dir
tests/probes."""

import sys
import types

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    # what a real import of the library underneath would leave in sys.modules
    sys.modules.setdefault("preload_z", types.ModuleType("preload_z"))
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32"],
                                      layouts=["flat"])


build = _testkit.build
describe = _testkit.describe
consume = _testkit.consume
