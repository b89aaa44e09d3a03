"""array-api-strict: the Array API reference namespace, a strict wrapper around NumPy.

Cannot: hold float16 or bfloat16 (not Array API dtypes), make a read-only array through its
public API, or give a data pointer (describe() hands over the array's own buffer protocol,
__buffer__). Its __array__ raises TypeError on purpose on Python >= 3.12, so `array` is not
exported. Imports other than from_dlpack go through asarray, which wraps numpy.asarray.
"""

import _probekit

NAME = "array_api_strict"

xp = None

# How a reproducer spells array-api-strict (probes/README.md, "Reproducers"). Arrays have no
# tolist() and no data pointer; the contents are read through NumPy's from_dlpack (the library
# wraps NumPy, so NumPy is there), and read-only-ness from the array's own buffer, as describe().
REPRO = {
    "import": "import array_api_strict as xp",
    "ns": "xp",
    "build": "xp.asarray(values, dtype={dtype})",
    "reshape": "{x} = xp.reshape({x}, {shape})",
    "permute": "{x} = xp.permute_dims({x}, {perm})",
    "broadcast": "{x} = xp.broadcast_to({x}, {shape})",
    "consume": {
        "dlpack": "xp.from_dlpack({obj})",
        **dict.fromkeys(_probekit.ASARRAY_PROTOCOLS, "xp.asarray({obj})"),
    },
    "tolist": "np.from_dlpack({y}).tolist()",
    "readonly": "memoryview({y}).readonly",
    "extra_imports": {"np.from_dlpack(": "import numpy as np"},
    "compute": _probekit.scalar_identity_repro,
    **_probekit.ITEM_REPRO,
    "read": "np.from_dlpack({y}[{index}]).item()",
    "device": "xp.__array_namespace_info__().default_device()",
}


def load():
    global xp
    import array_api_strict as _xp

    xp = _xp
    return _probekit.load_info(
        xp.__version__,
        missing=dict.fromkeys(("float16", "bfloat16"), "not an Array API dtype")
        | {"unit_dims_odd": "the Array API has no way to set strides"},
        exports=_probekit.exports("dlpack", "buffer"),
        # asarray is documented as a wrapper of numpy.asarray (see its docstring)
        imports=_probekit.numpy_asarray_imports("array_api_strict.from_dlpack(obj)",
                                                "array_api_strict.asarray(obj)"),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
        from_dlpack_keywords=_probekit.keywords_taken(xp.from_dlpack, ("copy", "device")),
    )


def build(data, dtype, ops, readonly=False):
    import numpy  # for the staging array (the library has imported NumPy already)

    # array-api-strict stores a NumPy array; the staging copy becomes that array
    return _probekit.apply_ops(
        xp.asarray(_probekit.numpy_from_bytes(numpy, data, dtype)),
        ops,
        reshape=lambda y, shape: xp.reshape(y, tuple(shape)),
        permute=lambda y, perm: xp.permute_dims(y, tuple(perm)),
        broadcast=lambda y, shape: xp.broadcast_to(y, tuple(shape)),
    )


def describe(x):
    return _probekit.buffer_description(x, _probekit.dtype_name(x.dtype))


def consume(obj, protocol, dtype, **keywords):
    if "device" in keywords:  # only "cpu" is planned: the library's arrays live on the host
        keywords["device"] = xp.__array_namespace_info__().default_device()
    if protocol == "dlpack":
        return xp.from_dlpack(obj, **keywords)
    return xp.asarray(obj)


def compute(y):
    return _probekit.scalar_identity(y)


def read(x, index):
    # a 0-d array converts to the Python scalar of its kind
    item = x[index]
    for kind, to_python in (("bool", bool), ("integral", int), ("real floating", float)):
        if xp.isdtype(item.dtype, kind):
            return to_python(item)
    return complex(item)


def write(x, index, value):
    x[index] = value
