"""A library at DLPack's negotiation edges, for interopcheck's own tests.

Its arrays are NumPy's behind a class of its own. By dtype:

  as a consumer (importing through its own capsule handling, then NumPy):
    float32   takes a capsule named used_* (handed out before) by renaming it back: imports
              what another consumer owns                       -> used_capsule fails
              (dlpack.consumer_used_capsule); the plain case passes
  as a producer:
    int16     flags its export IS_COPIED though it shares the array's memory
                                                                -> fails dlpack.copy_flag
    int32     exports as NumPy does                            -> passes

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

# How a reproducer spells negolib: the test module itself (_testkit.self_repro), whose
# consume() renames a used capsule back.
REPRO = {
    **_testkit.self_repro("negolib"),
    "consume": {"dlpack": "negolib.consume({obj}, 'dlpack', 'float32')"},
}

# The fresh name of each used one: module constants, since PyCapsule_SetName keeps the pointer
_FRESH = {b"used_dltensor_versioned": b"dltensor_versioned", b"used_dltensor": b"dltensor"}

# IS_COPIED, and where DLManagedTensorVersioned keeps its flags: after the version (two
# uint32), manager_ctx and the deleter
_IS_COPIED = 1 << 1
_FLAGS_AT = 8 + 2 * ctypes.sizeof(ctypes.c_void_p)


class Array(_testkit.CpuArray):
    """negolib's array: NumPy's export, flagged IS_COPIED for int16."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        capsule = self.array.__dlpack__(stream=stream, max_version=max_version)
        if self.array.dtype.name == "int16" and max_version is not None:
            managed = _testkit.capsule_pointer(capsule, b"dltensor_versioned")
            ctypes.c_uint64.from_address(managed + _FLAGS_AT).value |= _IS_COPIED
        return capsule


def load():
    return _testkit.load_numpy_dlpack("Array.__dlpack__", dtypes=["float32", "int16", "int32"],
                                      layouts=["flat"])


def build(data, dtype, ops, readonly=False):
    return Array(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    capsule = obj.__dlpack__(max_version=(1, 3))
    api = _probekit._capsule_api()
    fresh = _FRESH.get(api.get_name(capsule))
    if fresh:
        api.set_name(capsule, fresh)
    return _testkit.np.from_dlpack(_testkit.CapsuleHolder(capsule))
