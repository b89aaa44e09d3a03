"""A GPU array library that runs on the CUDA stand-in, for interopcheck's own GPU tests.

CI machines have no GPU. This test library allocates "device" memory through whatever CUDA
driver library interopcheck was pointed at with IC_CUDA_LIBRARY (in the tests: the host-memory
stand-in of tests/cuda_standin/), and exports and imports it over the CUDA Array Interface and
DLPack (kDLCUDA capsules built here with ctypes). The driver side of interopcheck therefore runs
its real GPU code path: pointer attributes, the verification kernels, streams. Without
IC_CUDA_LIBRARY it declares no devices.

What goes wrong depends on the dtype, so one run exercises every GPU finding:

  float32   correct: device memory, the right ordinal, synchronises streams      -> pass
  int32     correct, in pinned host memory (kDLCUDAHost)                           -> pass
  uint16    correct, in managed memory (kDLCUDAManaged)                            -> pass
  int8      claims device memory for a plain host buffer        -> fail (memory type)
  int16     says device 1 for memory of device 0 (DLPack)        -> fail (device ordinal)
  uint8     describes more elements than it allocated            -> fail (span)
  float64   exports while its stream still has work queued, and never makes the consumer wait
                                                                  -> fail (stream ordering)
  int64     correct, on the legacy default stream, exported over the CUDA Array Interface as
            version 2 (no stream key, as PyTorch does): its consumers order their reads after
            the legacy default stream                                     -> pass
  uint32    correct, but describe() gives the contents only, as a library with no pointer API
            (TensorFlow on a GPU) does: compared on the host, zero-copy not checked -> pass

Read-only arrays (the `readonly` variant) carry DLPack's read-only flag and refuse legacy
capsules, as they should, but the CUDA Array Interface says writable for them
                                                                  -> fail (cai.readonly)

With FAKEGPU_ABORT_EXTENT=N, every import of an array whose first extent is N aborts, and
FAKEGPU_LOAD_DELAY=S makes load() take S seconds more (a crash-heavy GPU run, for the benchmark
bench/bench_gpu_crashes.py). With FAKEGPU_REFUSE_STREAM_0 set, __dlpack__(stream=0) raises AssertionError, as PyTorch's does
(the spec disallows 0 and names no exception). With FAKEGPU_ABORT_ONCE=PATH, its first import in a run (while PATH does not exist) aborts the
process after creating PATH: a crashing pair whose later cases must still run on the GPU.

It is loaded only with --probe-dir tests/probes.
"""

import ctypes
import os
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

drv = None
np = None
context = ctypes.c_void_p()
# Arrays alive by id: the DLPack deleter drops the capsule's reference through this table.
_exported = {}

ITEMSIZE = _probekit.ITEMSIZE
DLPACK_CODES = {"bool": (6, 8), "int8": (0, 8), "int16": (0, 16), "int32": (0, 32),
                "int64": (0, 64), "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32),
                "uint64": (1, 64), "float16": (2, 16), "float32": (2, 32), "float64": (2, 64)}
TYPESTR = {"bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
           "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
           "float16": "<f2", "float32": "<f4", "float64": "<f8"}


# Memory kinds by dtype, with their DLPack device type and describe() device name.
MEMORY = {"int32": ("host", 3, "cuda_host"), "uint16": ("managed", 13, "cuda_managed")}


def _check(result, call):
    if result != 0:
        raise RuntimeError(f"{call} failed with CUresult {result}")


@_testkit.DELETER
def _deleter(managed):
    _exported.pop(managed, None)


# The destructor gets the dying capsule as a raw pointer: turning it into a Python object
# would touch the reference count of an object that is being freed.
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# Private prototypes (ctypes.pythonapi's functions are shared by every library in the process).
_api = ctypes.PyDLL(None)
# PYFUNCTYPE: these are Python C-API calls, made with the GIL held.
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 CAPSULE_DESTRUCTOR)(("PyCapsule_New", _api))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))


@CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # An unconsumed capsule still carries the fresh name: then the deleter is ours to call.
    for name in (b"dltensor_versioned", b"dltensor"):
        if _capsule_is_valid(capsule, name):
            _deleter(_capsule_get_pointer(capsule, name))


class FakeArray:
    """An array in (stand-in) device memory; `owner` keeps the allocation alive."""

    def __init__(self, pointer, shape, strides, dtype, owner, stream):
        self.pointer, self.shape, self.strides = pointer, tuple(shape), tuple(strides)
        self.dtype, self.owner, self.stream = dtype, owner, stream
        self.host_buffer = None  # int8: the plain host memory it pretends is device memory
        self.readonly = False

    # -- what goes wrong, by dtype (see the module docstring) --
    def _claimed_shape(self):
        if self.dtype == "uint8" and self.shape:
            return (self.shape[0] + 64,) + self.shape[1:]
        return self.shape

    def _synchronises(self):
        return self.dtype != "float64"

    @property
    def __cuda_array_interface__(self):
        if self.dtype == "int64":
            # version 2, which has no stream key, as PyTorch exports
            return {"shape": self.shape, "typestr": TYPESTR[self.dtype],
                    "data": (self.pointer if _numel(self.shape) else 0, False),
                    "strides": self.strides, "version": 2}
        return {
            "shape": self._claimed_shape(),
            "typestr": TYPESTR[self.dtype],
            # never says read-only, not even for a read-only array: the cai.readonly test
            "data": (self.pointer if _numel(self.shape) else 0, False),
            "strides": self.strides,
            "version": 3,
            # a producer with queued work must name its stream; float64 pretends it has none
            "stream": self.stream if self._synchronises() and self.stream else None,
        }

    def _device_type(self):
        return MEMORY[self.dtype][1] if self.dtype in MEMORY else 2

    def __dlpack_device__(self):
        return (self._device_type(), 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # Refusals the spec allows: no legacy capsules (allowed since 2025), no copies
        if max_version is None or max_version[0] < 1:
            raise BufferError("fakegpu exports versioned capsules only")
        if copy or dl_device not in (None, (2, 0)):
            raise BufferError("fakegpu neither copies nor moves arrays between devices")
        if stream == 0 and os.environ.get("FAKEGPU_REFUSE_STREAM_0"):
            # the spec disallows stream=0 and names no exception: PyTorch's refusal
            raise AssertionError("unsupported stream on CUDA: 0.")
        if stream is not None and stream not in (-1,) and self._synchronises():
            # make the consumer's stream wait for the work queued on ours
            event = ctypes.c_void_p()
            _check(drv.cuEventCreate(ctypes.byref(event), 0), "cuEventCreate")
            _check(drv.cuEventRecord(event, ctypes.c_void_p(self.stream)), "cuEventRecord")
            # 1 and 2 are CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, valid handles as they are
            _check(drv.cuStreamWaitEvent(ctypes.c_void_p(stream), event, 0), "cuStreamWaitEvent")
            drv.cuEventDestroy_v2(event)
        return self._capsule(versioned=True)

    def to_dlpack(self):
        """A legacy capsule, as the to_dlpack functions of TensorFlow and cuDF make them."""
        if self.readonly:
            raise BufferError("fakegpu cannot mark a legacy capsule read-only")
        return self._capsule(versioned=False)

    def _capsule(self, versioned):
        itemsize = ITEMSIZE[self.dtype]
        shape = self._claimed_shape()
        managed = _testkit.DLManagedTensorVersioned() if versioned else _testkit.DLManagedTensor()
        keep = {
            "shape": (ctypes.c_int64 * max(len(shape), 1))(*shape),
            "strides": (ctypes.c_int64 * max(len(shape), 1))(*[s // itemsize for s in self.strides]),
            "struct": managed,
            "array": self,
        }
        if versioned:
            managed.version = _testkit.DLPackVersion(1, 0)
            managed.flags = 1 if self.readonly else 0  # DLPACK_FLAG_BITMASK_READ_ONLY
        managed.deleter = _deleter
        code, bits = DLPACK_CODES[self.dtype]
        managed.dl_tensor = _testkit.DLTensor(
            self.pointer if _numel(self.shape) else None,
            _testkit.DLDevice(self._device_type(), 1 if self.dtype == "int16" else 0), len(shape),
            _testkit.DLDataType(code, bits, 1), keep["shape"], keep["strides"], 0)
        address = ctypes.addressof(managed)
        _exported[address] = keep
        name = b"dltensor_versioned" if versioned else b"dltensor"
        return _capsule_new(address, name, _capsule_destructor)


def _numel(shape):
    n = 1
    for extent in shape:
        n *= extent
    return n


class Allocation:
    """Device memory, or pinned host / managed memory for the dtypes of MEMORY."""

    def __init__(self, size, kind="device"):
        self.kind = kind
        size = max(size, 1)
        if kind == "host":
            self.host = ctypes.c_void_p()
            _check(drv.cuMemAllocHost_v2(ctypes.byref(self.host), size), "cuMemAllocHost")
            self.pointer = ctypes.c_uint64(self.host.value)
        else:
            self.pointer = ctypes.c_uint64()
            if kind == "managed":
                _check(drv.cuMemAllocManaged(ctypes.byref(self.pointer), size, 1),
                       "cuMemAllocManaged")
            else:
                _check(drv.cuMemAlloc_v2(ctypes.byref(self.pointer), size), "cuMemAlloc")

    def __del__(self):
        if drv is None:
            return
        if self.kind == "host":
            drv.cuMemFreeHost(self.host)
        else:
            drv.cuMemFree_v2(self.pointer)


def load():
    global drv, np
    import numpy as _np

    np = _np
    path = os.environ.get("IC_CUDA_LIBRARY")
    info = {
        "version": "0.0.1",
        "devices": [],
        "dtypes": list(DLPACK_CODES),
        "layouts": ["contiguous", "flat", "transposed", "strided", "offset", "scalar", "empty",
                    "ndim32"],
        "notes": {d: "fakegpu has the dtypes of its test plan only"
                  for d in _probekit.DTYPES if d not in DLPACK_CODES},
        "readonly": True,
        "exports": {"dlpack": {"call": "FakeArray.__dlpack__", "devices": ["cuda"]},
                    "dlpack_capsule": {"call": "FakeArray.to_dlpack()", "devices": ["cuda"]},
                    "cuda_array_interface": {"call": "FakeArray.__cuda_array_interface__",
                                             "devices": ["cuda"]}},
        "imports": {"cuda_array_interface": {"call": "fakegpu.consume(obj)", "zero_copy": True,
                                             "typed": True, "readonly": False,
                                             "devices": ["cuda"]}},
    }
    for layout in ("fortran", "reversed", "unit_dims", "broadcast"):
        info["notes"][layout] = "fakegpu has the layouts of its test plan only"
    if not path:
        info["notes"]["cuda"] = "fakegpu runs on the CUDA stand-in only: set IC_CUDA_LIBRARY"
        return info
    # an import as slow as a GPU library's (bench/bench_gpu_crashes.py)
    time.sleep(float(os.environ.get("FAKEGPU_LOAD_DELAY", "0")))
    drv = ctypes.CDLL(path)
    _check(drv.cuInit(0), "cuInit")
    device = ctypes.c_int()
    _check(drv.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(drv.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    _check(drv.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    info["devices"] = ["cuda"]
    return info


def build(data, dtype, ops, readonly=False, device="cpu"):
    _probekit.require_cuda(device)
    base_array = _probekit.numpy_from_bytes(np, data, dtype)
    host = _probekit.apply_ops(base_array, ops)
    size = len(data)
    stream = ctypes.c_void_p()
    if dtype != "int64":  # int64 arrays live on the legacy default stream (0)
        _check(drv.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")  # non-blocking
    if dtype == "int8":
        # plain host memory, never registered with the driver, passed off as device memory
        buffer = ctypes.create_string_buffer(data, max(size, 1))
        base, owner = ctypes.addressof(buffer), buffer
    else:
        owner = Allocation(size, MEMORY.get(dtype, ("device",))[0])
        base = owner.pointer.value
        if size:
            _check(drv.cuMemcpyHtoD_v2(ctypes.c_uint64(base), data, size), "cuMemcpyHtoD")
    # the view's first element sits where the host view's sits in its own base
    offset = host.ctypes.data - base_array.ctypes.data if host.size else 0
    array = FakeArray(base + offset, host.shape, host.strides, dtype, owner, stream.value or 0)
    array.readonly = readonly
    return array


def describe(x):
    device = MEMORY[x.dtype][2] if x.dtype in MEMORY else "cuda"
    if x.dtype == "uint32":
        return {"bytes": _contents(x), "shape": list(x.shape), "dtype": x.dtype,
                "readonly": x.readonly, "device": [device, 0]}
    return _probekit.pointer_description(x.pointer, x.shape, x.strides, x.dtype, x.readonly,
                                         device=(device, 0))


def _contents(x):
    """The elements of x in C order, copied to the host element by element."""
    itemsize = ITEMSIZE[x.dtype]
    out = bytearray()
    element = ctypes.create_string_buffer(itemsize)
    _check(drv.cuStreamSynchronize(ctypes.c_void_p(x.stream)), "cuStreamSynchronize")
    for index in np.ndindex(*x.shape):
        address = x.pointer + sum(i * s for i, s in zip(index, x.strides))
        _check(drv.cuMemcpyDtoH_v2(element, ctypes.c_uint64(address), itemsize), "cuMemcpyDtoH")
        out += element.raw
    return bytes(out)


def export(x, protocol):
    if protocol == "dlpack_capsule":
        return x.to_dlpack()
    return x


def stream(x):
    return x.stream


def consume(obj, protocol, dtype):
    abort_extent = os.environ.get("FAKEGPU_ABORT_EXTENT")
    if abort_extent and obj.__cuda_array_interface__["shape"][:1] == (int(abort_extent),):
        os.abort()  # every import of arrays of that first extent (bench/bench_gpu_crashes.py)
    marker = os.environ.get("FAKEGPU_ABORT_ONCE")
    if marker and not os.path.exists(marker):
        # a consumer that dies on its first import, once per run (test_gpu): the pair's later
        # cases then run isolated, and must still reach the GPU
        open(marker, "w").close()
        os.abort()
    cai = obj.__cuda_array_interface__
    if cai.get("stream"):
        # the consumer's duty under rule 3.1.9: wait for the producer's stream
        _check(drv.cuStreamSynchronize(ctypes.c_void_p(cai["stream"])), "cuStreamSynchronize")
    itemsize = ITEMSIZE[dtype]
    shape = cai["shape"]
    strides = cai.get("strides") or _probekit.c_strides(shape, itemsize)
    return FakeArray(cai["data"][0], shape, strides, dtype, obj, 0)
