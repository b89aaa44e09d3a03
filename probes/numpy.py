"""NumPy: the reference host library; every layout is a genuine view.

Cannot: import raw DLPack capsules (numpy.from_dlpack wants an object with __dlpack__), and it
has no to_dlpack function. bfloat16 exists only through ml_dtypes, and NumPy refuses to export it
over DLPack unless someone calls numpy.dtypes.register_dlpack_dtype, which NumPy documents as
meant for dtype authors, not users, so the probe leaves it unregistered.
"""

import _probekit

NAME = "numpy"

np = None

# How a reproducer spells NumPy (probes/README.md, "Reproducers").
REPRO = {
    "import": "import numpy as np",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    "dtypes": {"bfloat16": "ml_dtypes.bfloat16", "bool": "np.bool_"},
    "make_readonly": "x.setflags(write=False)",
    "consume": {
        "dlpack": "np.from_dlpack({obj})",
        "array_interface": "np.asarray({obj})",
        "array_struct": "np.asarray({obj})",
        "buffer": "np.asarray({obj})",
        "array": "np.asarray({obj})",
    },
    "pointer": "{y}.ctypes.data",
    "readonly": "not {y}.flags.writeable",
    "extra_imports": {"ml_dtypes.": "import ml_dtypes"},
}


def load():
    global np
    import numpy

    np = numpy
    dtypes = [d for d in _probekit.DTYPES if d != "bfloat16"]
    notes = {}
    try:
        import ml_dtypes  # noqa: F401

        dtypes.insert(dtypes.index("float32"), "bfloat16")
    except ImportError:
        notes["bfloat16"] = "NumPy has bfloat16 only through ml_dtypes, which is not installed"
    # numpy.asarray documents that it copies only for __array__ results, nested sequences or a
    # dtype/order change, so interface and buffer imports share memory.
    shared = {"call": "numpy.asarray(obj)", "zero_copy": True, "typed": True, "readonly": True}
    return {
        "version": np.__version__,
        "devices": ["cpu"],
        "dtypes": dtypes,
        "layouts": list(_probekit.LAYOUTS),
        "notes": notes,
        "readonly": True,
        "exports": {
            "dlpack": {"call": "x.__dlpack__"},
            "array_interface": {"call": "x.__array_interface__"},
            "array_struct": {"call": "x.__array_struct__"},
            "buffer": {"call": "memoryview(x)"},
            "array": {"call": "x.__array__"},
        },
        "imports": {
            "dlpack": dict(shared, call="numpy.from_dlpack(obj)"),
            "array_interface": dict(shared),
            "array_struct": dict(shared),
            "buffer": dict(shared),
            # __array__ results are what asarray copies
            "array": dict(shared, zero_copy=False),
        },
    }


def build(data, dtype, ops, readonly=False):
    x = _probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops, xp=np)
    if readonly:
        x.setflags(write=False)
    return x


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype):
    if protocol == "dlpack":
        return np.from_dlpack(obj)
    return np.asarray(obj)
