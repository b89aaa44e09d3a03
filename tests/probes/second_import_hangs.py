"""A library whose second import hangs, and only that one: the first (discovery's) and any later
import are quick. With -j2 the second import is the prewarming worker's, during discovery
(src/run/README.md): the run must charge no case for it, give that worker up and run its cases
again. The imports are counted in files under $IC_TEST_IMPORT_DIR (without it every import is
quick). Loaded only with --probe-dir tests/probes."""

import os
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


def _count_import():
    folder = os.environ.get("IC_TEST_IMPORT_DIR")
    if not folder:
        return 0
    count = len(os.listdir(folder))
    open(os.path.join(folder, f"import-{os.getpid()}"), "w").close()
    return count


def load():
    if _count_import() == 1:
        time.sleep(3600)  # the supervisor's import timeout ends it
    return _testkit.load_numpy_dlpack("numpy.ndarray.__dlpack__", dtypes=["float32", "int16"],
                                      layouts=["flat", "contiguous"])


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
