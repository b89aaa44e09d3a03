"""A library that points its exports at memory that is not there, for test_guard.py.

Its arrays wrap NumPy arrays. What goes wrong depends on the dtype; every other export is
NumPy's own, so the neighbouring cases of a run must pass:

  float32   exports correctly over every protocol                   -> pass
  int8      DLPack: byte_offset 2**40                                -> fail (dlpack.address)
  int16     DLPack: data in a page it has just unmapped              -> fail (dlpack.address)
  int32     DLPack: the shape array in an unmapped page              -> fail (dlpack.shape_strides)
  int64     DLPack: the capsule's pointer is an unmapped page        -> fail (dlpack.managed_tensor)
  uint8     __array_interface__: data[0] is an unmapped page         -> fail (array_interface.data)
  uint16    __array_struct__: the struct's data is an unmapped page  -> fail (array_struct.memory)
  uint32    the buffer protocol: a buffer over an unmapped page      -> fail (buffer.fields)
  float64   DLPack: its __dlpack_device__ calls the deleter of the   -> fail (dlpack.deleter_early)
            export it handed out last (seen when a consumer asks for
            the device after importing, as its own consumer does)
  complex64 DLPack: every __dlpack__ call returns the same capsule   -> fail (dlpack.capsule_name)
            (seen when a consumer imports twice, as its own does)
  uint64    DLPack: a copy in pages of its own, to which its         -> fail (dlpack.address)
            __dlpack_device__ takes all access while the consumer
            holds them (readable when exported, gone when compared)

Its consumer (dlpack only) imports with numpy.from_dlpack, then asks for the device again and
imports a second time, both of which a consumer may do. As a consumer it misbehaves once:

  complex128  it returns an array over an unmapped page, not its   -> fail (exchange.contents,
              import                                                     the consumer's)

Every address it hands out is a page made unreachable right before the export (mmap, then
munmap) or an address far above the mapped memory: nothing in interopcheck may read it, and
the worker must live on. The ctypes structs it builds are kept for the life of the worker (a
deleter may run after the case). Loaded only with --probe-dir tests/probes.
"""

import ctypes
import mmap

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

np = None

_PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

# Capsule names must outlive their capsules: module constants do.
_VERSIONED = b"dltensor_versioned"

# Everything a capsule points at, kept until the worker exits.
_kept = []


def _hole():
    """The address of a page that was mapped a moment ago and is not any more."""
    address = _libc.mmap(None, _PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    if _libc.munmap(address, _PAGE) != 0:
        raise OSError(ctypes.get_errno(), "munmap failed")
    return address


# The deleter of the capsules built here: the memory stays in _kept, so there is nothing to
# free; the calls are counted for the curious.
deleter_calls = []


@_testkit.DELETER
def _deleter(address):
    deleter_calls.append(address)


_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def _versioned_capsule(array, data=None, byte_offset=0, shape_at=None, flags=0):
    """A dltensor_versioned capsule describing `array`, with what the case breaks."""
    ndim = array.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*[s // array.itemsize for s in array.strides])
    managed = _testkit.DLManagedTensorVersioned()
    managed.version = _testkit.DLPackVersion(1, 3)
    managed.deleter = _deleter
    managed.flags = flags
    tensor = managed.dl_tensor
    tensor.data = array.ctypes.data if data is None else data
    tensor.device = _testkit.DLDevice(1, 0)
    tensor.ndim = ndim
    tensor.dtype = _testkit.DLDataType(_DL_CODES[array.dtype.kind], array.itemsize * 8, 1)
    tensor.shape = ctypes.cast(ctypes.addressof(shape) if shape_at is None else shape_at,
                               ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = byte_offset
    _kept.append((managed, shape, strides, array))
    return managed, _testkit.capsule_new(ctypes.addressof(managed), _VERSIONED, None)


class MemArray:
    def __init__(self, array):
        self.array = array
        self.last_export = None  # the struct of the last capsule handed out (float64)
        self.capsule = None  # the one capsule handed out again and again (complex64)
        self.pages = None  # (address, size) of the copy it takes away after the export (uint64)

    def _kind(self):
        return self.array.dtype.name

    def __dlpack_device__(self):
        if self._kind() == "float64" and self.last_export is not None:
            # The bug under test: the producer frees the tensor it exported while the
            # consumer still uses it (through the struct's deleter, as C code would).
            managed = self.last_export
            managed.deleter(ctypes.addressof(managed))
        if self._kind() == "uint64" and self.pages is not None:
            # The same bug without the deleter: the memory of the export is taken away. (Not
            # unmapped: the next mapping of that size would land there and hide the bug.)
            _libc.mprotect(*self.pages, 0)  # PROT_NONE
        return (1, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kind = self._kind()
        plain = max_version is not None and stream is None and dl_device is None and not copy
        if kind == "int8" and plain:
            return _versioned_capsule(self.array, byte_offset=2 ** 40)[1]
        if kind == "int16" and plain:
            return _versioned_capsule(self.array, data=_hole())[1]
        if kind == "int32" and plain and self.array.ndim > 0:
            return _versioned_capsule(self.array, shape_at=_hole())[1]
        if kind == "int64" and plain:
            return _testkit.capsule_new(_hole(), _VERSIONED, None)
        if kind == "float64" and plain:
            managed, capsule = _versioned_capsule(self.array)
            self.last_export = managed
            return capsule
        if kind == "uint64" and plain and self.pages is None:
            size = max(self.array.nbytes, 1)
            size += -size % _PAGE
            address = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE,
                                 mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
            copy = np.ascontiguousarray(self.array)
            ctypes.memmove(address, copy.ctypes.data, copy.nbytes)
            self.pages = (address, size)
            # A copy, and it says so (DLPACK_FLAG_BITMASK_IS_COPIED): only its lifetime is wrong.
            return _versioned_capsule(copy, data=address, flags=2)[1]
        if kind == "complex64" and plain:
            if self.capsule is None:
                self.capsule = self.array.__dlpack__(max_version=max_version)
            return self.capsule
        return self.array.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                     copy=copy)

    @property
    def __array_interface__(self):
        spec = dict(self.array.__array_interface__)
        if self._kind() == "uint8":
            spec["data"] = (_hole(), False)
        return spec

    @property
    def __array_struct__(self):
        if self._kind() != "uint16":
            return self.array.__array_struct__
        array = self.array
        shape = (ctypes.c_ssize_t * max(array.ndim, 1))(*array.shape)
        strides = (ctypes.c_ssize_t * max(array.ndim, 1))(*array.strides)
        struct = _testkit.PyArrayInterface(2, array.ndim, b"u", array.itemsize, 0x1 | 0x100 | 0x200 | 0x400,
                                 ctypes.addressof(shape), ctypes.addressof(strides), _hole(),
                                 None)
        _kept.append((struct, shape, strides))
        return _testkit.capsule_new(ctypes.addressof(struct), None, None)

    def __buffer__(self, flags):
        if self._kind() == "uint32":
            # ctypes builds an object over any address without reading it: its buffer is the
            # unmapped page, with a valid format and shape.
            return memoryview((ctypes.c_uint32 * self.array.size).from_address(_hole()))
        return memoryview(self.array)


def load():
    global np
    import numpy as _np

    np = _np
    return {
        "version": "0.0.1",
        "devices": ["cpu"],
        "dtypes": ["float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "float64", "complex64", "uint64", "complex128", "bool"],
        "layouts": ["contiguous", "flat"],
        "notes": {},
        "readonly": False,
        "exports": {"dlpack": {"call": "MemArray.__dlpack__"},
                    "array_interface": {"call": "MemArray.__array_interface__"},
                    "array_struct": {"call": "MemArray.__array_struct__"},
                    "buffer": {"call": "MemArray.__buffer__"}},
        "imports": {
            "dlpack": {"call": "numpy.from_dlpack(obj), twice", "zero_copy": True, "typed": True,
                       "readonly": True},
        },
    }


def build(data, dtype, ops, readonly=False):
    return MemArray(_probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops))


def describe(x):
    return _probekit.numpy_like_description(x.array if isinstance(x, MemArray) else x)


_USED = b"used_dltensor_versioned"


def _consume_badly(obj):
    """A consumer that calls one export's deleter twice and leaks another: both are its
    findings, the first settled at once, the second only after a full collection."""
    twice = obj.__dlpack__(max_version=(1, 0))
    address = _testkit.capsule_pointer(twice, _VERSIONED)
    _testkit.capsule_rename(twice, _USED)
    managed = _testkit.DLManagedTensorVersioned.from_address(address)
    managed.deleter(address)
    managed.deleter(address)
    leaked = obj.__dlpack__(max_version=(1, 0))
    _testkit.capsule_rename(leaked, _USED)
    _kept.append(leaked)  # consumed, never released: the deleter is never called
    return np.from_dlpack(obj)


def consume(obj, protocol, dtype):
    if dtype == "bool":
        return _consume_badly(obj)
    first = np.from_dlpack(obj)
    if dtype == "complex128":
        # The consumer's bug: what it returns is not its import but an array on nothing.
        lost = (ctypes.c_double * (2 * first.size)).from_address(_hole())
        return np.ctypeslib.as_array(lost).view(np.complex128).reshape(first.shape)
    # Both are a consumer's right: asking for the device again, and importing again. A
    # conformant producer answers each with what it answered before, or a fresh capsule.
    obj.__dlpack_device__()
    try:
        np.from_dlpack(obj)
    except (BufferError, ValueError, TypeError, RuntimeError):
        pass  # the second import is not what this consumer returns; its export is judged
    return first
