"""TensorFlow (CPU eager tensors).

Cannot: express strided layouts (tensors are dense row-major; tf.transpose and slicing copy),
give a data pointer (describe() hands over memoryview(tensor) instead), import DLPack objects
(tf.experimental.dlpack.from_dlpack takes only a legacy "dltensor" capsule), or import buffers
typed: tf.constant(memoryview) reads elements as Python numbers and picks its own dtype, so
buffer import is left out. Tensors are immutable (always read-only).
"""

import _probekit

NAME = "tensorflow"

tf = None


def load():
    global tf
    import tensorflow as _tf

    tf = _tf
    no_views = "TensorFlow tensors are dense row-major: this op copies"
    return {
        "version": tf.__version__,
        "devices": ["cpu"],
        "dtypes": list(_probekit.DTYPES),
        "layouts": ["contiguous", "flat", "scalar", "empty"],
        "notes": {
            layout: no_views
            for layout in _probekit.LAYOUTS
            if layout not in ("contiguous", "flat", "scalar", "empty")
        }
        # GPU tensors have no pointer API and no memoryview, so describe() could only copy them
        # to the host: the GPU side is left out rather than checked without its addresses.
        | {"cuda": "TensorFlow has no public API for a GPU tensor's address; tensorflow-cpu has "
                   "no GPU at all"},
        "readonly": True,
        "exports": {
            "dlpack": {"call": "x.__dlpack__"},
            "dlpack_capsule": {"call": "tf.experimental.dlpack.to_dlpack(x)"},
            "buffer": {"call": "memoryview(x)"},
            "array": {"call": "x.__array__"},
        },
        "imports": {
            # Its docstring: "The returned tensor uses the memory shared by dlpack capsules".
            "dlpack_capsule": {
                "call": "tf.experimental.dlpack.from_dlpack(capsule)",
                "zero_copy": True,
                "typed": True,
                "readonly": "always",
            },
            "array_interface": {
                "call": "tf.constant(obj)",
                "zero_copy": False,
                "typed": True,
                "readonly": "always",
            },
            "array": {
                "call": "tf.constant(obj)",
                "zero_copy": False,
                "typed": True,
                "readonly": "always",
            },
        },
    }


def build(data, dtype, ops, readonly=False):
    x = tf.constant(_probekit.numpy_from_bytes(data, dtype))
    for name, arg in ops:
        if name != "reshape":
            raise NotImplementedError(f"TensorFlow cannot express {name!r} as a view")
        x = tf.reshape(x, arg)
    return x


def describe(x):
    dtype = x.dtype.name
    if dtype == "bfloat16":
        # memoryview() of a bfloat16 tensor raises (no PEP 3118 code); tf.bitcast to uint16
        # shares the tensor's buffer, so its memoryview shows the same memory.
        return _probekit.buffer_description(memoryview(tf.bitcast(x, tf.uint16)), dtype, True)
    return _probekit.buffer_description(memoryview(x), dtype, True)


def export(x, protocol):
    if protocol == "dlpack_capsule":
        return tf.experimental.dlpack.to_dlpack(x)
    return x


def consume(obj, protocol, dtype):
    if protocol == "dlpack_capsule":
        return tf.experimental.dlpack.from_dlpack(obj)
    return tf.constant(obj)
