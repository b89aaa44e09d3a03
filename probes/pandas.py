"""pandas Series over NumPy arrays.

A Series is one 1-D column: build() wraps its own NumPy view without a copy
(pd.Series(view, copy=False)), so the 1-D layouts exist (`flat`, `strided`, `reversed`,
`offset`, `empty`). It exports __array__ (the values under it) and an Arrow stream
(__arrow_c_stream__, through pyarrow), and imports Arrow streams with
pandas.Series.from_arrow(obj), which converts them into a NumPy-backed Series (a copy).
Cannot: hold bfloat16 (ml_dtypes' type is no pandas dtype), or say whether its values are
read-only (under copy-on-write to_numpy() hands out read-only views of writable memory).
"""

import _probekit

NAME = "pandas"

pd = None
np = None

# 1-D layouts a Series keeps as a view of the NumPy array it is given
LAYOUTS = ("flat", "strided", "reversed", "offset", "empty")

REPRO = {
    "import": "import pandas as pd\nimport numpy as np",
    "ns": "np",
    "build": lambda dtype, ops, readonly: [
        f"x = np.array(values, dtype={_probekit.numpy_dtype_text(dtype)})",
        *[_probekit.op_line(name, arg) for name, arg in ops],
        "x = pd.Series(x, copy=False)"],
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"arrow_stream": "pd.Series.from_arrow({obj})"},
    "tolist": "{y}.tolist()",
    "pointer": "{y}.to_numpy().ctypes.data",
    "shape": "{y}.shape",
    "compute": lambda dtype: "{y} | False" if dtype == "bool" else "{y} * 1",
}


def load():
    global pd, np
    import numpy
    import pandas

    pd, np = pandas, numpy
    return _probekit.load_info(
        pd.__version__,
        layouts=LAYOUTS,
        layout_note="a Series is one 1-D column",
        missing={"bfloat16": "ml_dtypes' bfloat16 is no pandas dtype"},
        exports=_probekit.exports("array", "arrow_stream"),
        # from_arrow converts the stream's arrays into NumPy-backed values: a copy
        imports=_probekit.imports({"arrow_stream": "pandas.Series.from_arrow(obj)"},
                                  zero_copy=False, readonly=False),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
    )


def build(data, dtype, ops, readonly=False):
    x = _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops, xp=np)
    if x.ndim != 1:
        raise NotImplementedError("a Series is 1-D")
    return pd.Series(x, copy=False)


def describe(x):
    # to_numpy() is a view of the values the Series holds (no copy for NumPy-backed values)
    values = x.to_numpy()
    return _probekit.pointer_description(values.ctypes.data, values.shape, values.strides,
                                         _probekit.dtype_name(values.dtype), None)


def consume(obj, protocol, dtype):
    return pd.Series.from_arrow(obj)


def compute(y):
    return _probekit.scalar_identity(y)
