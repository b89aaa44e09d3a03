"""A library with lazy negation views, for interopcheck's own tests.

Its neg_view arrays keep the negated elements in memory under a flag, as torch's negative bit
does; the array's values are the pattern. Exporting over DLPack, by dtype:

  float64   resolves the flag: exports a copy of the values, and says so     -> pass
  float32   exports the memory as it is, the flag lost                      -> fail
            (exchange.contents, the producer's)

Other layouts are plain NumPy arrays. It is loaded only with --probe-dir tests/probes.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

# How a reproducer spells lazylib: its lazy view is a class of the script's own
_LAZY = '''
class Lazy:
    def __init__(self, memory):
        self.memory = memory

    def tolist(self):
        return (-self.memory).tolist()

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        lost = self.memory.dtype == np.float32
        return (self.memory if lost else -self.memory).__dlpack__(**kwargs)
'''

REPRO = {"import": "import numpy as np\n" + _LAZY, "ns": "np",
         "build": "np.array(values, dtype={dtype})", **_probekit.NUMPY_DTYPES_REPRO,
         "neg_view": "{x} = Lazy(-{x})", "consume": {"dlpack": "np.from_dlpack({obj})"}}


class LazyArray(_testkit.CpuArray):
    """`array` is the memory; the values are its negation."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self.array.dtype.name == "float32":
            return self.array.__dlpack__(stream=stream, max_version=max_version)
        # a resolved copy, flagged DLPACK_FLAG_BITMASK_IS_COPIED; a legacy capsule cannot say
        # it copied, so a legacy request is refused
        if max_version is None:
            raise BufferError("lazylib resolves a negation view by copying, which a legacy "
                              "capsule cannot say")
        values = _testkit.np.negative(self.array)
        return values.__dlpack__(stream=stream, max_version=max_version, copy=True)


def load():
    info = _testkit.load_numpy_dlpack("LazyArray.__dlpack__", dtypes=["float32", "float64"],
                                      layouts=["contiguous", "neg_view"])
    return info


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(_testkit.numpy_array(data, dtype, []), ops,
                               neg_view=lambda x, _: LazyArray(_testkit.np.negative(x)))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
