"""A library whose import hangs in the prewarming worker, and only there: its first import in
slot 1 (INTEROPCHECK_WORKER, probes/README.md), which with -j2 is the prewarming worker's,
made beside discovery's (src/run/README.md). Discovery's import and any later one are quick:
the run must charge no case for the hang, give that worker up and run its cases again. The
imports are counted in files under $IC_TEST_IMPORT_DIR (without it every import is quick).
Loaded only with --probe-dir tests/probes."""

import os
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def _first_in_slot_1():
    """Counts this import (a file per import) and says whether it is slot 1's first."""
    folder = os.environ.get("IC_TEST_IMPORT_DIR")
    if not folder:
        return False
    slot = os.environ.get("INTEROPCHECK_WORKER", "")
    earlier = [name for name in os.listdir(folder) if name.startswith(f"import-{slot}-")]
    open(os.path.join(folder, f"import-{slot}-{os.getpid()}"), "w").close()
    return slot == "1" and not earlier


def load():
    if _first_in_slot_1():
        time.sleep(3600)  # the supervisor's import timeout ends it
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32", "int16"],
                                      layouts=["flat", "contiguous"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
