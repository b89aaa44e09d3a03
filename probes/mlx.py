"""MLX (mlx.core, CPU build). Evaluated slices, transposes and broadcasts are strided views.

Cannot: hold complex128, make a read-only array (its buffer export is writable), give a data
pointer (describe() hands over the array's own buffer protocol), or import without copying on
the CPU build (from_dlpack(copy=False) raises "Cannot import a CPU array without a copy"). Its
imports turn float64 into float32 and complex128 into complex64. No __array_interface__ or
__array_struct__, and no to_dlpack function.
"""

import _probekit

NAME = "mlx"

mx = None


def _repro_build(dtype, ops, readonly):
    # mx.array takes a list in any of its dtypes (bfloat16, float64 and complex64 included), so
    # no carrier is needed here; the views, and the eval that makes them, are build()'s.
    if readonly:
        raise NotImplementedError("MLX cannot make a read-only array")
    lines = [f"x = mx.array(values, dtype=mx.{'bool_' if dtype == 'bool' else dtype})"]
    # MLX spells the views as NumPy does
    lines += [_probekit.op_line(name, arg, ns="mx") for name, arg in ops]
    lines.append("mx.eval(x)  # MLX makes the views when it evaluates the array")
    return lines


# How a reproducer spells MLX (probes/README.md, "Reproducers"). Its buffer export is a
# memoryview, so that a consumer such as mx.asarray meets the buffer protocol and not an
# mx.array. No read-only arrays and no data pointer: those keys stay out.
REPRO = {
    "import": "import mlx.core as mx",
    "ns": "mx",
    "build": _repro_build,
    "export": {"buffer": "memoryview(x)"},
    "consume": {
        "dlpack": "mx.from_dlpack({obj})",
        "dlpack_capsule": "mx.from_dlpack({obj})",
        "buffer": "mx.asarray({obj})",
    },
    "compute": _probekit.scalar_identity_repro,
    **_probekit.ITEM_REPRO,
}


def load():
    global mx
    import mlx.core as _mx

    mx = _mx
    return _probekit.load_info(
        mx.__version__,
        missing={"complex128": "MLX has no complex128",
                 "unit_dims_odd": "mlx.core.as_strided " + _probekit.UNIT_STRIDE_NOTE},
        # MLX's documentation says NumPy float64 arrays become float32 arrays on import
        deviations=[
            {
                "rule": "exchange.dtype",
                "side": "consumer",
                "dtypes": ["float64"],
                "link": "https://ml-explore.github.io/mlx/build/html/usage/numpy.html",
                "reason": "float64 imports become float32",
            }
        ],
        exports=_probekit.exports("dlpack", "buffer", "array"),
        # Imports are documented as "share memory when possible", which the CPU build never
        # finds.
        imports=_probekit.imports({"dlpack": "mlx.core.from_dlpack(obj)",
                                   "dlpack_capsule": "mlx.core.from_dlpack(capsule)",
                                   "buffer": "mlx.core.asarray(obj)"},
                                  zero_copy=False, readonly=False),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
        from_dlpack_keywords=_probekit.keywords_taken(mx.from_dlpack, ("copy",)),
    )


# mx.array cannot take these from a buffer as they are (no format for bfloat16 and complex64,
# and it turns float64 into float32), so the bytes go in as same-size unsigned integers and
# Array.view reinterprets them.
_CARRIERS = {"bfloat16": "H", "float64": "Q", "complex64": "Q"}


def _dtype(name):
    return mx.bool_ if name == "bool" else getattr(mx, name)


def build(data, dtype, ops, readonly=False):
    n = len(data) // _probekit.ITEMSIZE[dtype]
    if n == 0:
        x = mx.zeros((0,), dtype=_dtype(dtype))
    elif dtype in _CARRIERS:
        x = mx.array(memoryview(data).cast(_CARRIERS[dtype])).view(_dtype(dtype))
    else:
        # mx.array copies the buffer into MLX's memory
        x = mx.array(memoryview(data).cast(_probekit.FORMATS[dtype]))
    x = _probekit.apply_ops(x, ops, xp=mx)
    # views exist only once evaluated; describe() would evaluate anyway
    mx.eval(x)
    return x


def describe(x):
    mx.eval(x)
    dtype = _probekit.dtype_name(x.dtype)
    if dtype == "bfloat16":
        # memoryview of a bfloat16 array has the format "bfloat16", which is not PEP 3118;
        # Array.view(uint16) shares the same memory with a valid format
        view = x.view(mx.uint16)
        mx.eval(view)
        return _probekit.buffer_description(view, dtype, False)
    return _probekit.buffer_description(x, dtype, False)


def consume(obj, protocol, dtype, **keywords):
    if protocol == "buffer":
        return mx.asarray(obj)
    return mx.from_dlpack(obj, **keywords)  # copy= only: MLX's from_dlpack has no device=


def compute(y):
    # MLX is lazy: the result is evaluated here, so that the kernels run inside compute()
    result = _probekit.scalar_identity(y)
    mx.eval(result)
    return result


# No write(): MLX's item assignment is functional. It gives the array a new buffer unless
# MLX can donate the old one, so a write may or may not reach memory MLX shares with another
# library, and MLX does not promise either. Only reads are checked (what another library wrote).
def read(x, index):
    return x[index].item()
