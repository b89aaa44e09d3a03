"""A library that publishes the DLPack C exchange API, for interopcheck's own tests.

Its arrays hold a NumPy array and export it over DLPack as NumPy does. Its array type publishes
__dlpack_c_exchange_api__: a table built with ctypes whose managed_tensor_from_py_object_no_sync
takes NumPy's own versioned export. What the table does, by dtype:

  float32   exports the array, as __dlpack__ does                       -> pass
  int32     exports another array of the same shape (zeros)             -> fail (dlpack.c_api_agrees,
                                                                           exchange.contents)
  int16     arrays of another type, whose table says version 2.0        -> fail (dlpack.c_api_table)
  uint8     arrays of a type whose current_work_stream returns -1       -> fail (dlpack.c_api_stream)

As a consumer it imports through its own table (the from_c_api variant): its
managed_tensor_to_py_object_no_sync hands the tensor to NumPy, which calls the deleter when done;
for int32 it copies the values out and never releases the tensor (dlpack.deleter_once, a leak,
the consumer's).

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")


class Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class Table(ctypes.Structure):
    """DLPackExchangeAPI: its header, then five function pointers."""
    _fields_ = [("version", Version), ("prev_api", ctypes.c_void_p),
                ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
                ("current_work_stream", ctypes.c_void_p)]


_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_TO_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32,
                           ctypes.POINTER(ctypes.c_void_p))
_UNUSED = ctypes.CFUNCTYPE(ctypes.c_int)
_kept = []  # what the wrong exports point at, kept alive


@_FROM_PY
def _from_py_object(py_object, out):
    x = ctypes.cast(py_object, ctypes.py_object).value
    source = x.array
    if source.dtype.name == "int32":
        source = _testkit.np.zeros_like(source)
        _kept.append(source)
    capsule = source.__dlpack__(max_version=(1, 3))
    out[0] = _testkit.capsule_pointer(capsule, b"dltensor_versioned")
    _testkit.capsule_rename(capsule, b"used_dltensor_versioned")  # the managed tensor is ours
    return 0


@_TO_PY
def _to_py_object(managed, out):
    tensor = _testkit.DLManagedTensorVersioned.from_address(managed).dl_tensor
    if tensor.dtype.code == 0 and tensor.dtype.bits == 32:
        # the bug, for int32: the values copied out, the tensor never released
        count = 1
        for i in range(tensor.ndim):
            count *= tensor.shape[i]
        data = ctypes.string_at(tensor.data + tensor.byte_offset, 4 * count)
        array = _testkit.np.frombuffer(data, dtype="int32").copy()
    else:
        capsule = _testkit.capsule_new(managed, b"dltensor_versioned", None)
        array = _testkit.np.from_dlpack(_testkit.CapsuleHolder(capsule))
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(array))  # the new reference `out` hands over
    out[0] = id(array)
    return 0


@_STREAM
def _current_work_stream(device_type, device_id, out):
    out[0] = None  # a CPU library: no stream
    return 0


@_STREAM
def _no_stream(device_type, device_id, out):
    return -1


@_UNUSED
def _unused():
    return -1


def _table(major, stream=_current_work_stream):
    table = Table(Version(major, 0), None, ctypes.cast(_unused, ctypes.c_void_p),
                  ctypes.cast(_from_py_object, ctypes.c_void_p),
                  ctypes.cast(_to_py_object, ctypes.c_void_p), None,
                  ctypes.cast(stream, ctypes.c_void_p))
    _kept.append(table)
    return _testkit.capsule_new(ctypes.addressof(table), b"dlpack_exchange_api", None)


class CapiArray(_testkit.CpuArray):
    __dlpack_c_exchange_api__ = _table(1)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.array.__dlpack__(stream=stream, max_version=max_version)


class FutureArray(CapiArray):
    __dlpack_c_exchange_api__ = _table(2)


class StreamlessArray(CapiArray):
    __dlpack_c_exchange_api__ = _table(1, _no_stream)


def load():
    info = _testkit.load_numpy_dlpack("CapiArray.__dlpack__", dtypes=["float32", "int32", "int16", "uint8"],
                                      layouts=["contiguous", "flat"])
    info["exports"]["dlpack"]["c_api"] = True
    info["imports"]["dlpack"] = dict(info["imports"]["dlpack"], keywords=["c_api"])
    return info


def build(data, dtype, ops, readonly=False):
    cls = {"int16": FutureArray, "uint8": StreamlessArray}.get(dtype, CapiArray)
    return cls(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype, c_api=False):
    if c_api:
        return _probekit.c_api_import(CapiArray, obj)
    return _testkit.np.from_dlpack(obj)


# How a reproducer spells capilib: the table is what its arrays' type publishes, so the script
# makes them through this very file (_testkit.self_repro).
REPRO = {
    **_testkit.self_repro("capilib"),
    "consume": {"dlpack": "np.from_dlpack({obj})"},
    "c_api_type": "capilib.CapiArray",
}
