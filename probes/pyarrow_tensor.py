"""PyArrow tensors (pyarrow.Tensor): N-d, strided, over Arrow-allocated memory.

pyarrow has no tensor operations, and pyarrow.Tensor.from_numpy is its only constructor, so the
probe lays out each view with NumPy over an Arrow buffer and wraps that view; the tensor keeps
the view's shape and strides, and the memory stays the Arrow buffer.
Cannot: hold negative strides (from_numpy and from_dlpack refuse them: no `reversed`), bool
(a bool array becomes uint8), complex or bfloat16. No data pointer API, so describe() hands over
the tensor's own buffer protocol. Tensors have no __array__ and no NumPy interfaces.
"""

import _probekit

NAME = "pyarrow_tensor"

pa = None
np = None


def _repro_build(dtype, ops, readonly):
    """The reproducer's lines making x as build() does: a NumPy view of an Arrow buffer."""
    size = _probekit.ITEMSIZE[dtype]
    lines = [f"buf = pa.allocate_buffer({size} * len(values))",
             f"view = np.frombuffer(buf, dtype={_probekit.numpy_dtype_text(dtype)})",
             "view[:] = values"]
    lines += [_probekit.op_line(name, arg, x="view") for name, arg in ops]
    if readonly:
        lines.append("view.setflags(write=False)")
    return lines + ["x = pa.Tensor.from_numpy(view)"]


# How a reproducer spells pyarrow.Tensor (probes/README.md, "Reproducers"); pyarrow has no
# tensor operations, so the views are NumPy's over Arrow memory, as in build().
REPRO = {
    "import": "import numpy as np\nimport pyarrow as pa",
    "ns": "pa",
    "build": _repro_build,
    "consume": {"dlpack": "pa.Tensor.from_dlpack({obj})"},
    "tolist": "{y}.to_numpy().tolist()",
    "dtype": _probekit.ARROW_DTYPE_REPRO,
    "readonly": "not {y}.is_mutable",
}


def load():
    global pa, np
    import numpy as _np
    import pyarrow as _pa

    pa, np = _pa, _np
    return _probekit.load_info(
        pa.__version__,
        missing={
            "reversed": "pyarrow.Tensor refuses negative strides",
            "bool": "pyarrow.Tensor stores a bool array as uint8",
            **_probekit.ARROW_MISSING,
        },
        readonly=True,
        exports=_probekit.exports("dlpack", "buffer"),
        # documented: copy=None "duplicates only when necessary", which it never is on CPU
        imports=_probekit.imports({"dlpack": "pyarrow.Tensor.from_dlpack(obj)"},
                                  zero_copy=True, readonly=True),
    )


def build(data, dtype, ops, readonly=False):
    buf = _probekit.arrow_copy(pa, data)
    view = _probekit.apply_ops(np.frombuffer(buf, dtype=dtype), ops, xp=np,
                               unit_stride=_probekit.numpy_unit_stride)
    if readonly:
        view.setflags(write=False)
    return pa.Tensor.from_numpy(view)


def describe(x):
    return _probekit.buffer_description(x, _probekit.arrow_dtype_name(x.type), not x.is_mutable)


def consume(obj, protocol, dtype):
    return pa.Tensor.from_dlpack(obj)
