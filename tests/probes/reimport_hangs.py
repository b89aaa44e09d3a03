"""A library cheap to import the first time and never again, whose import of a float64 array
kills the worker (SIGSEGV), for tests/integration/test_supervisor.py.

The crash isolates the pair numpy -> reimport_hangs, and its later cases go to a lean worker
(src/run/README.md): a process started afresh that imports only the pair. Discovery's import
of this library is quick, so the pair looks cheap to import, but every later import in a new
process hangs: the lean worker must be given up within its import budget and the cases run in
a copy of the template, with their own outcomes (float32 passes, float64 crashes), none an
import error. The imports are counted in files under $IC_TEST_IMPORT_DIR (without it every
import is quick). Loaded only with --probe-dir tests/probes.
"""

import os
import signal
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def _imported_before():
    """Counts this import (a file per import) and says whether one came before it."""
    folder = os.environ.get("IC_TEST_IMPORT_DIR")
    if not folder:
        return False
    earlier = os.listdir(folder)
    open(os.path.join(folder, f"import-{os.getpid()}"), "w").close()
    return bool(earlier)


def load():
    if _imported_before():
        time.sleep(3600)  # the lean worker's import budget ends it
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32", "float64"],
                                      layouts=["contiguous", "flat"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "float64":
        os.kill(os.getpid(), signal.SIGSEGV)  # isolates the pair
    return _testkit.consume(obj, protocol, dtype)
