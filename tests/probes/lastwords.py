"""A library whose crashes leave different last words, for the tests of what a crash's
diagnostic quotes from the worker's output (tests/integration/test_last_words.py).

Its arrays are NumPy arrays; what its consume() does depends on the dtype:

  float32   imports correctly                                               -> pass
  bool      imports correctly, then stops the supervisor (SIGSTOP) for a second, so that the
            next case (int8) writes its output and dies before the supervisor has read this
            one's "end"                                                     -> pass
  int8      writes a line, then dies of SIGSEGV: faulthandler writes the Python stack
                                                                            -> crash (consumer)
  int16     fails a CHECK as TensorFlow does: absl's "F0000 ... Check failed: ..." line, then
            "*** Check failure stack trace: ***" and frames, then abort      -> crash (consumer)
  int32     dies of SIGKILL, which writes nothing, not even a Python stack  -> crash, the side
            cannot be told (no stack of its own: int16's, in the same output, must not speak
            for it)

int8's crash isolates the pair, so that int16 and int32 run one after the other in copies of
the worker forked for them, whose output is the worker's.

load() greets on stderr, as TensorFlow does on import: no crash may quote it.
It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import os
import signal
import subprocess
import time

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

GREETING = b"lastwords: oneDNN-like greeting written when the library is imported\n"


def load():
    os.write(2, GREETING)
    return _testkit.load_numpy_dlpack(
        "numpy.ndarray.__dlpack__",
        dtypes=["bool", "float32", "int8", "int16", "int32"],
        layouts=["contiguous"])


build = _testkit.build
describe = _testkit.describe


def _supervisor():
    """The supervisor's pid: the first process up from this one that is no worker (a forked
    copy's parent is the worker)."""
    pid = os.getppid()
    for _ in range(3):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"--worker-fd" not in handle.read():
                return pid
        with open(f"/proc/{pid}/stat", "rb") as handle:
            pid = int(handle.read().rsplit(b")", 1)[1].split()[1])
    raise RuntimeError("no supervisor above this worker")


def _stop_supervisor_a_while():
    # The supervisor has read this case's "begin" and queued the next case by now; stopped,
    # it reads this case's "end" only after the next case has written its output and died.
    time.sleep(0.3)
    supervisor = _supervisor()
    subprocess.Popen(["sh", "-c", f"sleep 1; kill -CONT {supervisor}"], start_new_session=True)
    os.kill(supervisor, signal.SIGSTOP)


def consume(obj, protocol, dtype):
    if dtype == "bool":
        _stop_supervisor_a_while()
    if dtype == "int8":
        os.write(2, b"lastwords: cannot take this import\n")
        os.kill(os.getpid(), signal.SIGSEGV)
    if dtype == "int32":
        os.kill(os.getpid(), signal.SIGKILL)
    if dtype == "int16":
        os.write(2, b"F0000 00:00:1795906254.185009   25586 tensor.cc:899] Check failed: "
                 b"IsAligned() ptr = 0x55c76f2b7145\n*** Check failure stack trace: ***\n"
                 + b"".join(b"    @     0x7f%010x  lastwords::Consume%d()\n" % (n, n)
                            for n in range(12)))
        os.abort()
    return _testkit.np.from_dlpack(obj)
