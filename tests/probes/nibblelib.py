"""A library that exports 4-bit integers over DLPack, for interopcheck's own tests.

Its arrays are ml_dtypes' int4 and uint4 in NumPy, one element a byte, behind a class of its own.
NumPy will not export them, so __dlpack__ exports the same bytes as NumPy's int8 (uint8) and
rewrites the capsule's dtype. By dtype:

    int4    (kDLInt, 4 bits) with DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: one element a
            byte, as DLPack spells it                                     -> passes
    uint4   (kDLUInt, 8 bits): the array's bytes as uint8, a dtype that is not the array's
                                                                          -> fails exchange.dtype

Without max_version (a legacy capsule, which has no flags) int4 is refused with BufferError: a
legacy capsule cannot say its 4-bit elements are padded.

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

REPRO = _testkit.self_repro("nibblelib")

# DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, and where DLManagedTensorVersioned keeps its flags
_PADDED = 1 << 2
_FLAGS_AT = 8 + 2 * ctypes.sizeof(ctypes.c_void_p)


class Array(_testkit.CpuArray):
    """nibblelib's array: the bytes of an ml_dtypes int4/uint4 array, exported as DLPack says
    for int4 and as uint8 for uint4."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        dtype = self.array.dtype.name
        if dtype == "int4" and max_version is None:
            raise BufferError("a legacy capsule cannot mark 4-bit elements as padded")
        storage = self.array.view("int8" if dtype == "int4" else "uint8")
        capsule = storage.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                     copy=copy)
        if dtype == "int4":
            managed = _testkit.capsule_pointer(capsule, b"dltensor_versioned")
            struct = _testkit.DLManagedTensorVersioned.from_address(managed)
            struct.dl_tensor.dtype.bits = 4
            ctypes.c_uint64.from_address(managed + _FLAGS_AT).value |= _PADDED
        return capsule  # NumPy's capsule keeps the view, and so the array, alive


def load():
    info = _testkit.load_numpy_dlpack("Array.__dlpack__", dtypes=["int4", "uint4"],
                                      layouts=["flat", "strided"])
    import ml_dtypes  # noqa: F401  (the library's 4-bit integers)

    return info


def build(data, dtype, ops, readonly=False):
    return Array(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    return _testkit.np.from_dlpack(obj)
