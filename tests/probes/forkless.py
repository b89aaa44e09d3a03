"""A test library whose arrays are unusable in a forked copy of the worker that loaded it, as
JAX's are (its CPU client's threads, started by load(), are not in a fork), for
tests/integration/test_supervisor.py.

It consumes NumPy's DLPack exports as NumPy does, but an import of an int16 array kills the
process (SIGSEGV), which isolates the pair, and an import in any process other than the one
that ran load() never returns. Its load() says "fork": false, so the pair's later cases must
run in a worker, where they pass (and the int16 ones crash again); with IC_TEST_FORKLESS_SAYS=fork
it says true, and those cases hang in the worker's forked child.
"""

import os
import signal
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

_loaded_in = None  # the pid of the process that ran load()


def load():
    global _loaded_in
    _loaded_in = os.getpid()
    info = _testkit.load_numpy_dlpack(
        "numpy's __dlpack__",
        dtypes=["float32", "int16"],
        layouts=["contiguous", "scalar"],
        notes={"bool": "forkless has only the dtypes of its test plan"})
    return info | {"fork": os.environ.get("IC_TEST_FORKLESS_SAYS") == "fork"}


def build(data, dtype, ops, readonly=False):
    return _testkit.numpy_array(data, dtype, ops)


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if os.getpid() != _loaded_in:
        time.sleep(3600)  # waits for what only the process that ran load() has
    if dtype == "int16":
        os.kill(os.getpid(), signal.SIGSEGV)
    return _testkit.np.from_dlpack(obj)
