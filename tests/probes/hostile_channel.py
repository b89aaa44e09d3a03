"""A library that attacks the worker it runs in, for interopcheck's supervisor tests.

Its consumer misbehaves by dtype; as a producer it is plain NumPy. Each attack must cost its
case alone:

  int8      writes garbage (text, NUL, half lines) to every descriptor it has   -> error
  int16     finds the channel's socket and sends a well-formed result for another case -> error
  int32     forks a child that dies with SIGSEGV, then hangs                    -> crash
  uint8     forks a child that dies with SIGSEGV, then exits                     -> crash
  uint16    stops itself with SIGSTOP                                           -> timeout
  float32   forks a child that keeps the channel open, then exits               -> crash
  float64   sends half a frame, then hangs                                      -> error
  complex64 sends a frame header announcing 2 GiB                               -> error
  bool      sends one NUL byte                                                  -> error
  uint32    writes to the last socket among its descriptors: after the crashes above its
            pair's cases run in a child of the worker, whose channel to the worker that is,
            so it forges the child's acknowledgement                            -> error
  int64     imports correctly                                                   -> pass

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import json
import os
import signal
import struct

import _probekit
import time

_testkit = _probekit.sibling(__file__, "_testkit")


def _descriptors():
    return sorted(int(name) for name in os.listdir("/proc/self/fd"))


def _is_socket(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    except OSError:
        return False


def _channel():
    """The worker's socket, found as a library that looks for it would."""
    for fd in _descriptors():
        if _is_socket(fd):
            return fd
    raise RuntimeError("no socket among the descriptors")


def _frame(payload):
    return b"IC\x01\x00" + struct.pack(">I", len(payload)) + payload


def _write(fd, data):
    try:
        os.write(fd, data)
    except OSError:
        pass


def load():
    return _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__",
        dtypes=["int8", "int16", "int32", "uint8", "uint16", "float32", "float64", "complex64",
                "bool", "int64"],
        layouts=["contiguous"])


build = _testkit.build
describe = _testkit.describe


def _fork_crashing_child():
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGSEGV)
        os._exit(0)
    os.waitpid(pid, 0)


def consume(obj, protocol, dtype):
    if dtype == "int8":
        for fd in _descriptors():
            for garbage in (b"garbage\n", b"\x00", b"{\"half\": "):
                _write(fd, garbage)
        return _testkit.np.from_dlpack(obj)
    if dtype == "int16":
        forged = {"msg": "end", "seq": 1, "case": "dlpack.numpy.numpy.cpu.float32.flat",
                  "result": {"outcome": "pass", "diagnostic": "", "checks": {}}}
        _write(_channel(), _frame(json.dumps(forged).encode()))
        return _testkit.np.from_dlpack(obj)
    if dtype == "int32":
        _fork_crashing_child()
        time.sleep(3600)
    if dtype == "uint8":
        _fork_crashing_child()
        os._exit(1)
    if dtype == "uint16":
        os.kill(os.getpid(), signal.SIGSTOP)
    if dtype == "float32":
        child = os.fork()
        if child == 0:
            time.sleep(3600)  # holds the worker's socket open
            os._exit(0)
        if os.environ.get("IC_TEST_PIDFILE"):  # the test checks the child is gone after the run
            with open(os.environ["IC_TEST_PIDFILE"], "w") as handle:
                handle.write(str(child))
        os._exit(0)
    if dtype == "float64":
        _write(_channel(), b"IC\x01\x00\x00\x00\x00\x40{\"msg\": ")
        time.sleep(3600)
    if dtype == "complex64":
        _write(_channel(), b"IC\x01\x00\x80\x00\x00\x00")
        time.sleep(3600)
    if dtype == "bool":
        _write(_channel(), b"\x00")
        time.sleep(3600)
    if dtype == "uint32":
        sockets = [fd for fd in _descriptors() if _is_socket(fd)]
        _write(sockets[-1], b"forged")
        time.sleep(3600)
    return _testkit.np.from_dlpack(obj)
