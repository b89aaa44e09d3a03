"""NumPy: the reference host library; every layout is a genuine view.

Cannot: import raw DLPack capsules (numpy.from_dlpack wants an object with __dlpack__), and it
has no to_dlpack function. bfloat16, the float8 kinds and int4/uint4 exist only through
ml_dtypes, and NumPy refuses to export them
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
    **_probekit.NUMPY_DTYPES_REPRO,
    "make_readonly": "x.setflags(write=False)",
    "consume": {
        "dlpack": "np.from_dlpack({obj})",
        **dict.fromkeys(_probekit.ASARRAY_PROTOCOLS, "np.asarray({obj})"),
    },
    "pointer": "{y}.ctypes.data",
    # x moved to 64-byte aligned memory, as build() makes it: some consumers copy otherwise
    "align": ("_b = np.zeros(x.nbytes + 64, np.uint8); "
              "_a = _b[-_b.ctypes.data % 64:][:x.nbytes].view(x.dtype).reshape(x.shape); "
              "_a[...] = x; x = _a"),
    "readonly": "not {y}.flags.writeable",
    "compute": _probekit.scalar_identity_repro,
    **_probekit.ITEM_REPRO,
}


def load():
    global np
    import numpy

    np = numpy
    missing = {}
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        missing["bfloat16"] = "NumPy has bfloat16 only through ml_dtypes, which is not installed"
        missing |= dict.fromkeys(_probekit.FLOAT8_DTYPES, "NumPy has 8-bit floats only through "
                                 "ml_dtypes, which is not installed")
        missing |= dict.fromkeys(_probekit.INT4_DTYPES, "NumPy has 4-bit integers only through "
                                 "ml_dtypes, which is not installed")
    return _probekit.load_info(
        np.__version__,
        missing=missing,
        readonly=True,
        exports=_probekit.exports("dlpack", "array_interface", "array_struct", "buffer", "array"),
        imports=_probekit.numpy_asarray_imports("numpy.from_dlpack(obj)", "numpy.asarray(obj)"),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
        float8=True,
        int4=True,
        from_dlpack_keywords=_probekit.keywords_taken(np.from_dlpack, ("copy", "device")),
    )


def build(data, dtype, ops, readonly=False):
    x = _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops, xp=np,
                            unit_stride=_probekit.numpy_unit_stride)
    if readonly:
        x.setflags(write=False)
    return x


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype, **keywords):
    if protocol == "dlpack":
        return np.from_dlpack(obj, **keywords)
    return np.asarray(obj)


def compute(y):
    # an operation on a 0-d array gives a NumPy scalar: asarray makes it the array it holds
    return np.asarray(_probekit.scalar_identity(y))


def read(x, index):
    return x[index].item()


def write(x, index, value):
    x[index] = value
