"""A consumer of one DLPack era, for interopcheck's own tests of the legacy_only and
versioned_only variants (interopcheck's proxy playing a producer of another era).

It imports NumPy's arrays over DLPack by asking for the capsule itself, then hands it to NumPy:

  float32   asks with max_version and never retries              -> legacy_only fails
            (dlpack.consumer_retry), versioned_only passes
  int32     asks without max_version                            -> legacy_only passes the import
            but fails dlpack.consumer_max_version, as every case of it does; versioned_only is
            refused (BufferError) and fails dlpack.consumer_max_version

It exports nothing. It is loaded only with --probe-dir tests/probes.
"""

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

REPRO = {"import": "import numpy as np", "ns": "np", "build": "np.array(values, dtype={dtype})",
         **_probekit.NUMPY_DTYPES_REPRO, "consume": {"dlpack": "eralib_import({obj})"},
         "extra_imports": {"eralib_import(": (
             "def eralib_import(obj):\n"
             "    capsule = obj.__dlpack__(max_version=(1, 3))\n"
             "    holder = type('Holder', (), {'__dlpack__': lambda self, **kw: capsule,\n"
             "                                 '__dlpack_device__': lambda self: (1, 0)})\n"
             "    return np.from_dlpack(holder())")}}


def load():
    return _testkit.load_numpy(dtypes=["float32", "int32"], layouts=["flat"], exports={},
                               imports={"dlpack": _testkit.NUMPY_DLPACK})


build = _testkit.build
describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "float32":
        capsule = obj.__dlpack__(max_version=(1, 3))
    else:
        capsule = obj.__dlpack__()
    return _testkit.np.from_dlpack(_testkit.CapsuleHolder(capsule))
