"""With order_second.py: two libraries that only coexist in one import order, as PaddlePaddle
and TensorFlow do (paddle imported after tensorflow kills the process). This one kills the
process when order_second was imported before it. Discovery imports them in catalog order and
sees no conflict; a worker that happens to import order_second first must learn the order at run
time and run the case again, losing nothing. Loaded only with --probe-dir tests/probes."""

import os
import signal
import sys

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def load():
    if "interopcheck_probe_order_second" in sys.modules:
        os.kill(os.getpid(), signal.SIGSEGV)
    return _testkit.load_numpy(
        version="1.0",
        dtypes=["float32"],
        layouts=["flat"],
        exports={"array_interface": {"call": "x.__array_interface__"}},
        imports={"array_interface": _testkit.NUMPY_ARRAY_INTERFACE})


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.asarray(obj)
