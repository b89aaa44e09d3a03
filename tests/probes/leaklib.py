"""A producer whose exports keep its arrays alive, for interopcheck's own tests.

Its arrays hold a NumPy array and export it over DLPack as NumPy does; what goes wrong is what
it keeps for each export, by dtype:

  float32   nothing: the array is freed once the consumer let go             -> pass
  int32     the array itself, in a module-level list, forever                  -> fail
            (exchange.owner_released, the producer's)
  int16     every array it builds, exported or not (a cache of its own): the
            control array stays alive too, so nothing is charged              -> pass

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

_kept = []  # what the broken exports and the cache hold

def _repro_build(dtype, ops, readonly):
    lines = [f"x = np.array(values, dtype=np.{dtype})"]
    if dtype == "int32":  # what its export keeps, spelled as the list that keeps it
        lines.append("_kept = [x]")
    return lines


# How a reproducer spells leaklib: NumPy underneath, with the list its int32 exports fill.
REPRO = {"import": "import numpy as np", "ns": "np", "build": _repro_build,
         "consume": {"dlpack": "np.from_dlpack({obj})"}}


class LeakArray(_testkit.CpuArray):
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self.array.dtype.name == "int32":
            _kept.append(self)
        return self.array.__dlpack__(stream=stream, max_version=max_version)


def load():
    return _testkit.load_numpy_dlpack("LeakArray.__dlpack__",
                                      dtypes=["float32", "int32", "int16"],
                                      layouts=["contiguous", "flat"])


def build(data, dtype, ops, readonly=False):
    x = LeakArray(_testkit.numpy_array(data, dtype, ops))
    if dtype == "int16":
        _kept.append(x)
    return x


describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
