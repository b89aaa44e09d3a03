"""A consumer that takes from_dlpack's keywords and does the opposite, for interopcheck's tests.

Its from_dlpack(obj, copy=..., device=...) is NumPy's without the keywords: asked to copy it
hands back the producer's memory, asked not to it copies (exchange.consumer_copy and
exchange.consumer_no_copy, the consumer's); copy=None and device="cpu" behave. It exports
nothing. It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

# How a reproducer spells copylib: the keyword goes to a function that drops it, as consume()
# does (the opposite of what it asked for is done to the result).
REPRO = {
    "import": "import numpy as np\n\n\n"
              "def copylib_from_dlpack(obj, copy=None, device=None):\n"
              "    y = np.from_dlpack(obj)\n"
              "    return y.copy() if copy is False else y",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"dlpack": "copylib_from_dlpack({obj})"},
    "pointer": "{y}.ctypes.data",
}


def load():
    info = _testkit.load_numpy(dtypes=["float32"], layouts=["flat"], exports={},
                               imports={"dlpack": dict(_testkit.NUMPY_DLPACK,
                                                       keywords=["copy", "device"])})
    return info


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype, copy=None, device=None):
    y = _testkit.np.from_dlpack(obj)
    return y.copy() if copy is False else y
