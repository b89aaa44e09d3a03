"""A deliberately broken array library, for interopcheck's own integration tests.

Its arrays wrap NumPy arrays. What goes wrong depends on the dtype, so one run exercises every
outcome the driver must tell apart:

  float32   exports and imports correctly                       -> pass
  int8      __dlpack__ refuses with BufferError                 -> unsupported
  int16     __dlpack__ refuses with ValueError                  -> fail (dlpack 2.3 errors)
  uint8     __dlpack__ exports another array's memory           -> fail (contents)
  float64   consume() kills the worker with SIGSEGV             -> crash
  int32     consume() asks for the export, then aborts after a C++ exception's message and
            backtrace, as PyTorch does on negative strides                -> crash (SIGABRT)
            __dlpack__ of an int32 array with dimensions exports CuPy 14's stride for -1
            element, (2**64 - 4) // 4: badlib to badlib is then a crash charged to the
            producer, under dlpack.strides
  complex64 consume() never returns                             -> timeout
  build() of a 0-d array raises RuntimeError                    -> error (the probe's)
          ... of a 0-d int8 array NotImplementedError           -> unsupported (cannot build)

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes
import os
import signal

import _probekit
import time

_testkit = _probekit.sibling(__file__, "_testkit")


class BadArray(_testkit.CpuArray):
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kind = self.array.dtype.name
        if kind == "int8":
            raise BufferError("badlib cannot export int8")
        if kind == "int16":
            raise ValueError("badlib cannot export int16")
        source = _testkit.np.zeros_like(self.array) if kind == "uint8" else self.array
        capsule = source.__dlpack__(stream=stream, max_version=max_version)
        if kind == "int32" and self.array.ndim:
            _overflow_first_stride(capsule, max_version is not None and max_version[0] >= 1)
        return capsule


def _overflow_first_stride(capsule, versioned):
    """Writes CuPy 14's stride into NumPy's capsule: (2**64 - 4) // 4 for -1 element, a
    negative byte stride divided as unsigned."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    managed = get(capsule, b"dltensor_versioned" if versioned else b"dltensor")
    tensor = managed + (32 if versioned else 0)  # the DLTensor inside the managed tensor
    strides = ctypes.c_void_p.from_address(tensor + 32).value
    ctypes.c_int64.from_address(strides).value = (2**64 - 4) // 4


def load():
    return _testkit.load_numpy_dlpack(
        "BadArray.__dlpack__",
        dtypes=["float32", "int8", "int16", "uint8", "float64", "int32", "complex64"],
        layouts=["contiguous", "scalar"],
        notes={"bool": "badlib has only the dtypes of its test plan"})


def build(data, dtype, ops, readonly=False):
    if ops and ops[0][0] == "reshape" and not ops[0][1]:
        if dtype == "int8":  # the probe saying its library cannot make this one array
            raise NotImplementedError("badlib has no 0-d int8 arrays")
        raise RuntimeError("badlib's build() fails on 0-d arrays")  # an error of the probe
    return BadArray(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "float64":
        os.kill(os.getpid(), signal.SIGSEGV)
    if dtype == "int32":
        # as PyTorch dies of an uncaught C++ exception on what it was handed: it asks for the
        # export, then writes the exception's message and a backtrace, and aborts
        obj.__dlpack__(max_version=(1, 0))
        os.write(2, b"terminate called after throwing an instance of 'c10::Error'\n"
                 b"  what():  badlib cannot take negative strides\n"
                 + b"".join(b"frame #%d: <unknown function> + 0x%x (0x55d9d494b662 in "
                            b"/usr/lib/libbad.so)\n" % (n, 4096 * n) for n in range(20)))
        os.abort()
    if dtype == "complex64":
        time.sleep(3600)
    return _testkit.np.from_dlpack(obj)
