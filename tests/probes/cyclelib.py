"""A consumer whose import ends in a reference cycle of the collector's oldest generation, for
tests/integration/test_guard.py.

It imports NumPy's DLPack exports as NumPy does, then ties what it imported into a cycle and
runs a full collection while it still holds the cycle, so that the cycle survives into the
oldest generation. Once the tester lets go, only a full collection frees the import and runs
the export's deleter: the tester's second look (src/verify/ic_exchange.c) must still reach it
although the worker froze every object its imports left (ic_py_freeze_imports). A case that
finds no frozen object refuses the import (BufferError, `unsupported`), so a pass also says the
worker froze its imports before the case ran.
"""

import gc

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


class _Cycle:
    """Holds the import, and itself."""


def load():
    return _testkit.load_numpy_dlpack(
        "numpy's __dlpack__", import_call="numpy.from_dlpack(obj), then held in an old cycle",
        dtypes=["float32", "int16"], layouts=["contiguous", "flat"],
        notes={"bool": "cyclelib has only the dtypes of its test plan"})


def build(data, dtype, ops, readonly=False):
    return _testkit.numpy_array(data, dtype, ops)


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if not hasattr(gc, "get_freeze_count") or gc.get_freeze_count() == 0:
        raise BufferError("cyclelib: the worker froze nothing before this case")
    imported = _testkit.np.from_dlpack(obj)
    cycle = _Cycle()
    cycle.me = cycle
    cycle.imported = imported
    gc.collect()  # the cycle, still held here, moves to the oldest generation
    return imported
