"""A library that imports right and computes wrong, for interopcheck's own integration tests.

It imports NumPy's arrays over DLPack as NumPy does (its imports are NumPy arrays, and pass every
check of the exchange); what goes wrong is its compute(), the consumer's own operation on the
import (probes/README.md), by dtype:

  float32   computes right (y * 1)                                   -> pass
  int32     computes other values (y + 1)                            -> fail (exchange.compute)
  int16     raises ValueError on an import (its own int16 arrays compute)
                                                                     -> fail (exchange.compute_error)
  uint16    raises ValueError on every array, its own too: the library's coverage, not the
            exchange's doing                                         -> pass, compute skipped
  float64   aborts, as TensorFlow does on a misaligned import         -> crash, charged to it
  int8      has no operation for it, as load() says                  -> pass, compute skipped
  uint8     returns the import itself: nothing is computed            -> pass, compute skipped
  int64     widens the dtype: the probe's operation is wrong           -> error (the tool's side)

It exports nothing. It is loaded only with --probe-dir tests/probes; the built-in probe set never
sees it.
"""

import os
import weakref

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

DTYPES = ["float32", "int32", "int16", "uint16", "float64", "int8", "uint8", "int64"]

# What compute() does, spelled for a reproducer: an expression of {y} per dtype. The raise and
# the abort are expressions too, as a reproducer's computation is one line.
_REPRO_OPS = {
    "int32": "{y} + 1",
    "int16": '(_ for _ in ()).throw(ValueError("computelib cannot compute with int16"))',
    "float64": '__import__("os").abort()',
}

# How a reproducer spells computelib: NumPy underneath (probes/README.md, "Reproducers").
REPRO = {
    "import": "import numpy as np",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"dlpack": "np.from_dlpack({obj})"},
    "compute": lambda dtype: _REPRO_OPS.get(dtype, "{y} * 1"),
}


def load():
    info = _testkit.load_numpy(dtypes=DTYPES, layouts=["contiguous", "flat"],
                               notes={"bool": "computelib has only the dtypes of its test plan"},
                               exports={}, imports={"dlpack": _testkit.NUMPY_DLPACK})
    info["compute"] = _probekit.compute_info(
        "y * 1", missing={"int8": "computelib has no int8 kernels"})
    return info


build = _testkit.build
describe = _testkit.describe


# The arrays consume() returned, by id: int16 raises on those only.
_imports = weakref.WeakValueDictionary()


def consume(obj, protocol, dtype):
    y = _testkit.np.from_dlpack(obj)
    _imports[id(y)] = y
    return y


def compute(y):
    kind = y.dtype.name
    if kind == "int32":
        return y + 1
    if kind == "int16" and _imports.get(id(y)) is y:
        raise ValueError("computelib cannot compute with int16")
    if kind == "uint16":
        raise ValueError("computelib has no uint16 kernels")
    if kind == "float64":
        os.abort()
    if kind == "uint8":
        return y
    if kind == "int64":
        return y.astype("float64")
    return y * 1
