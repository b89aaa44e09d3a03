"""TensorFlow (eager tensors on the CPU, and on GPUs where TensorFlow sees one).

Cannot: express strided layouts (tensors are dense row-major; tf.transpose and slicing copy),
give a data pointer (describe() hands over memoryview(tensor) on the CPU, and on a GPU only the
contents, copied to the host: TensorFlow has no public API for a tensor's address, so zero-copy
is not checked for its GPU tensors), import DLPack objects
(tf.experimental.dlpack.from_dlpack takes only a legacy "dltensor" capsule: it is fed other
libraries' arrays over the dlpack protocol all the same, and its refusal is what the report
shows), or import buffers typed: tf.constant(memoryview) reads elements as Python numbers and picks its own dtype, so
buffer import is left out. Tensors are immutable (always read-only). GPU tensors come from the
tensorflow package with CUDA (tensorflow[and-cuda]); tensorflow-cpu sees no GPU and says so.
TensorFlow has no public stream, so its stream-ordering cases are not run. The GPU side has not
run in this project's CI (no GPU).
"""

import _probekit

NAME = "tensorflow"

tf = None


def _repro_build(dtype, ops, readonly):
    """The reproducer's lines making x as build() does on the CPU; only reshape is a view."""
    shapes = _probekit.reshape_only(ops, "TensorFlow")
    lines = ['with tf.device("/CPU:0"):',
             f"    x = tf.identity(tf.constant(values, dtype=tf.{dtype}))"]
    lines += [f"    x = tf.reshape(x, {tuple(shape)!r})" for shape in shapes]
    if readonly:
        lines.append("# TensorFlow tensors are immutable: x is read-only as it is")
    return lines


# How a reproducer spells TensorFlow (probes/README.md, "Reproducers"). Tensors have no
# data pointer and no way to say they are read-only: they always are.
REPRO = {
    "import": "import tensorflow as tf",
    "ns": "tf",
    "build": _repro_build,
    "export": {"dlpack_capsule": "tf.experimental.dlpack.to_dlpack(x)"},
    "consume": {
        "dlpack_capsule": "tf.experimental.dlpack.from_dlpack({obj})",
        "dlpack": "tf.experimental.dlpack.from_dlpack({obj})",
        "array_interface": "tf.constant({obj})",
        "array": "tf.constant({obj})",
    },
    "tolist": "{y}.numpy().tolist()",
    "dtype": "{y}.dtype.name",
    "compute": _probekit.scalar_identity_repro,
}


def warm():
    # TensorFlow makes an operation's kernel for a dtype the first time a process asks for it:
    # 2-5 ms each, 20-30 ms for the first, more in a forked process, which copies the pages it
    # touches. Each copy of discovery's worker that ran TensorFlow's cases, and each child forked
    # for a case of a pair that crashed (27 of them on --all, one after each crash), made them
    # again. compute()'s operation on each dtype it has is made once here, in the process they
    # are all copies of. --all, three runs each in turn: the first operation alone took
    # 0.45-0.6 s off (1 s of CPU); every dtype's, 0.05, 0.52 and 0.37 s more (0.6 s of CPU),
    # for 0.1 s here.
    for dtype in _probekit.DTYPES:
        if dtype in _NO_ARITHMETIC:
            continue
        try:
            compute(build(bytes(2 * _probekit.ITEMSIZE[dtype]), dtype, []))
        except Exception:  # a dtype without the operation: its cases say so
            pass


# The dtypes compute() has no operation for, and why: load()'s compute "missing", which warm()
# leaves out too
_NO_ARITHMETIC = (
    dict.fromkeys(_probekit.FLOAT8_DTYPES, "TensorFlow has no arithmetic on its 8-bit floats")
    | dict.fromkeys(_probekit.INT4_DTYPES, "TensorFlow has no arithmetic on its 4-bit integers"))


def _native_traces_off():
    """Turns off the native stack trace TensorFlow writes when one of its CHECKs fails.

    A failed CHECK (TensorFlow's abort on a misaligned DLPack import, say) writes its message,
    then a symbolized native stack trace, then aborts: the symbol lookups take ~120 ms of the
    ~170 ms such a crash costs, on every crashing case. The crash's diagnostic quotes the
    message and stops where the trace starts, and its attribution reads the Python stack
    faulthandler writes after it, so the trace adds nothing to a verdict; a reproducer, run
    without this probe, still writes it. Abseil's frame limit for that trace is set to 0
    through its exported setter, whose name carries the inline namespace that TensorFlow's
    bundled Abseil headers define. Where either is missing, nothing changes.
    """
    import ctypes
    import os
    import re

    root = os.path.dirname(tf.__file__)
    try:
        with open(os.path.join(root, "include", "absl", "base", "options.h")) as header:
            found = re.search(r"#define ABSL_OPTION_INLINE_NAMESPACE_NAME (\w+)", header.read())
        framework = ctypes.CDLL(os.path.join(root, "libtensorflow_framework.so.2"))
    except OSError:
        return
    inline = f"{len(found.group(1))}{found.group(1)}" if found else ""
    setter = getattr(framework, f"_ZN4absl{inline}12log_internal27SetMaxFramesInLogStackTraceEi",
                     None)
    if setter is not None:
        setter.argtypes = [ctypes.c_int]
        setter.restype = None
        setter(0)


def load():
    global tf
    import tensorflow as _tf

    tf = _tf
    _native_traces_off()
    devices, gpu_notes = _probekit.cpu_and_cuda(
        bool(tf.config.list_physical_devices("GPU")),
        "TensorFlow sees no GPU (tf.config.list_physical_devices('GPU') is empty): "
        "tensorflow-cpu, or no CUDA device")
    return _probekit.load_info(
        tf.__version__,
        devices=devices,
        layouts=_probekit.DENSE_LAYOUTS,
        layout_note="TensorFlow tensors are dense row-major: this op copies",
        missing=gpu_notes,
        readonly=True,
        exports=_probekit.exports("dlpack", dlpack_capsule="tf.experimental.dlpack.to_dlpack(x)")
        | _probekit.exports("buffer", "array", devices=["cpu"]),
        # Its docstring: "The returned tensor uses the memory shared by dlpack capsules".
        # Its one DLPack import is fed both what other libraries' to_dlpack functions make and
        # their arrays themselves (the dlpack protocol): it takes a capsule only, so it refuses
        # an array object, and the report says so with TensorFlow's own exception; a release
        # that takes objects is then tested as it is.
        imports=_probekit.imports(
            {"dlpack_capsule": "tf.experimental.dlpack.from_dlpack(capsule)"},
            zero_copy=True, readonly="always", devices=devices)
        | _probekit.imports({"dlpack": "tf.experimental.dlpack.from_dlpack(obj)"},
                            zero_copy=True, readonly="always", devices=devices, claimed=False)
        # tf.constant reads the interfaces into a new tensor
        | _probekit.imports({"array_interface": "tf.constant(obj)", "array": "tf.constant(obj)"},
                            zero_copy=False, readonly="always"),
        compute=_probekit.compute_info(
            _probekit.SCALAR_IDENTITY_CALL,
            missing=_NO_ARITHMETIC),
    )


def build(data, dtype, ops, readonly=False, device="cpu"):
    import numpy  # for the staging array (the library has imported NumPy already)

    # A tensor is dense and row-major whatever reshapes made it: the staging array is reshaped
    # on the host, where it is free, instead of by tf.reshape, an eager op of ~40 us a call
    host = _probekit.numpy_from_bytes(numpy, data, dtype)
    for shape in _probekit.reshape_only(ops, "TensorFlow"):
        host = host.reshape(tuple(shape))
    with tf.device("/GPU:0" if device == "cuda" else "/CPU:0"):
        # tf.identity places the tensor on the scope's device (a constant may stay on the host)
        return tf.identity(tf.constant(host))


def _gpu_ordinal(x):
    """The GPU index of a tensor placed on a GPU, or None for the host."""
    spec = tf.DeviceSpec.from_string(x.device)
    if spec.device_type != "GPU":
        return None
    return spec.device_index or 0


def describe(x):
    dtype = x.dtype.name
    ordinal = _gpu_ordinal(x)
    if ordinal is not None:
        # No address and no memoryview on a GPU: the contents, copied to the host in C order.
        host = tf.bitcast(x, tf.uint16) if dtype == "bfloat16" else x
        return {"bytes": host.numpy().tobytes(), "shape": list(x.shape), "dtype": dtype,
                "readonly": True, "device": ["cuda", ordinal]}
    if dtype in _probekit.FLOAT8_DTYPES or dtype in _probekit.INT4_DTYPES:
        # no memoryview (no PEP 3118 code) and no tf.bitcast of 8-bit floats or 4-bit
        # integers: the contents, copied to the host in C order
        return _probekit.contents_description(x.numpy(), dtype)
    if dtype == "bfloat16":
        # memoryview() of a bfloat16 tensor raises (no PEP 3118 code); tf.bitcast to uint16
        # shares the tensor's buffer, so its memoryview shows the same memory.
        return _probekit.buffer_description(memoryview(tf.bitcast(x, tf.uint16)), dtype, True)
    return _probekit.buffer_description(memoryview(x), dtype, True)


def export(x, protocol):
    return _probekit.capsule_or_self(x, protocol, tf.experimental.dlpack.to_dlpack)


def consume(obj, protocol, dtype):
    if protocol in ("dlpack_capsule", "dlpack"):
        return tf.experimental.dlpack.from_dlpack(obj)
    # A host export is imported onto the CPU, where the case is: with a GPU, TensorFlow places
    # a new tensor on it (as JAX does, seen on a GPU machine; not yet seen for TensorFlow).
    with tf.device("/CPU:0"):
        return tf.identity(tf.constant(obj))


def compute(y):
    # str() of a TensorFlow dtype is "<dtype: 'float32'>": the name comes from .name. On y's
    # own device: with a GPU, TensorFlow would run the operation there, copying a host y.
    with tf.device(y.device):
        return _probekit.scalar_identity(y, y.dtype.name)
