"""pandas Series backed by Arrow (pd.ArrowDtype: a pandas.arrays.ArrowExtensionArray).

The pandas probe covers NumPy-backed Series; this one covers the Series whose values are a
pyarrow array (dtypes such as "int32[pyarrow]"). build() wraps a pyarrow array of its own copy
without copying it again; iloc with a unit step is a view with an offset (`flat`, `offset`,
`empty`). It exports the Arrow stream (Series.__arrow_c_stream__) and __array__. It imports
nothing of its own: pandas.Series.from_arrow makes NumPy-backed Series (the pandas probe's
import). Cannot: hold complex or bfloat16 (Arrow has neither); its booleans are bit-packed.
Arrow data is immutable, so its Series are taken as read-only.
"""

import _probekit

NAME = "pandas_arrow"

pd = None
pa = None

# Arrow's primitive types (no bfloat16 or complex type); booleans are bit-packed
DTYPES = _probekit.dtypes_except("bfloat16", "complex64", "complex128")


# How a reproducer spells it (probes/README.md, "Reproducers"): the Series over a pyarrow array
# of the values, sliced by iloc as build() slices.
REPRO = {
    "import": "import pandas as pd\nimport pyarrow as pa",
    "ns": "pa",
    "build": "pd.Series(pa.array(values, type={dtype}), dtype=pd.ArrowDtype({dtype}))",
    "dtype_name": "{ns}.{dtype}()",
    "dtypes": {"bool": "pa.bool_()"},
    **_probekit.repro_views(slice=_probekit.column_slice_repro(
        "an Arrow-backed Series", "x = x.iloc[{start}:{stop}]")),
    "make_readonly": "# Arrow-backed Series hold immutable Arrow data: x is read-only as it is",
    "tolist": "{y}.tolist()",
    "shape": "{y}.shape",
}


def load():
    global pd, pa
    import pandas
    import pyarrow

    pd, pa = pandas, pyarrow
    return _probekit.arrow_column_info(
        pd.__version__,
        column="an Arrow-backed Series",
        exports=_probekit.exports("array", "arrow_stream"),
        imports={},
    )


def build(data, dtype, ops, readonly=False):
    if dtype not in DTYPES:
        raise TypeError(f"Arrow has no {dtype} type")
    x = pd.Series(pd.arrays.ArrowExtensionArray(_probekit.pyarrow_array(pa, data, dtype)))
    return _probekit.column_slice(x, ops, len, "an Arrow-backed Series",
                                  view=lambda y, start, n: y.iloc[start:start + n])


def describe(x):
    # The pyarrow data under the Series (ArrowExtensionArray.__arrow_array__ hands it over
    # without a copy), described as pyarrow's own
    return _probekit.pyarrow_description(pa, x.array.__arrow_array__())


def consume(obj, protocol, dtype):
    raise NotImplementedError("an Arrow-backed Series has no import of its own")
