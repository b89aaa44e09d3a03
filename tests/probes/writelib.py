"""A library that shares memory at import and then loses writes, for interopcheck's own tests.

Its arrays hold a NumPy array (`array`) and export it over DLPack; its imports are NumPy's
from_dlpack, so every address check passes. What goes wrong is writing and reading one element
(the probes' write() and read(), probes/README.md), by dtype:

  float32   writes and reads the shared memory                          -> pass
  int32     writes to a copy it makes on the first write (copy on write) -> fail, the writer's
  int16     reads from a snapshot taken when the array was made          -> fail, the reader's
  uint8     refuses to write (ValueError)                                -> pass, check skipped

As a consumer it loses NumPy's writes to int16 (it reads its snapshot) and its own to int32;
as a producer, NumPy's writes to its int16 arrays, and its own writes to int32 never reach NumPy.
It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

DTYPES = ["float32", "int32", "int16", "uint8"]

# How a reproducer spells writelib: NumPy underneath, its int32 write as a write to a copy.
# Its int16 reads from a snapshot have no one-line spelling: those reproducers run as NumPy
# would, and say "not reproduced".
REPRO = {
    "import": "import numpy as np",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"dlpack": "np.from_dlpack({obj})"},
    **_probekit.ITEM_REPRO,
    "write": lambda dtype: "{y}.copy()[{index}] = {value}" if dtype == "int32" else
    "{y}[{index}] = {value}",
}


class WriteArray(_testkit.CpuArray):
    def __init__(self, array):
        super().__init__(array)
        self.snapshot = array.copy()
        self.private = None  # the copy made on the first int32 write

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.array.__dlpack__(stream=stream, max_version=max_version)


def load():
    return _testkit.load_numpy_dlpack(
        "WriteArray.__dlpack__", dtypes=DTYPES, layouts=["contiguous", "strided", "reversed",
                                                         "offset"],
        notes={"bool": "writelib has only the dtypes of its test plan"})


def build(data, dtype, ops, readonly=False):
    return WriteArray(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    return WriteArray(_testkit.np.from_dlpack(obj))


def read(x, index):
    kind = x.array.dtype.name
    if kind == "int16":
        return x.snapshot[index].item()
    return (x.private if x.private is not None else x.array)[index].item()


def write(x, index, value):
    kind = x.array.dtype.name
    if kind == "uint8":
        raise ValueError("writelib arrays of uint8 are immutable")
    if kind == "int32" and x.private is None:
        x.private = x.array.copy()
    (x.private if x.private is not None else x.array)[index] = value
