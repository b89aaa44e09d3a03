"""Polars Series, over the Arrow PyCapsule interface.

Polars exports Arrow as a stream (__arrow_c_stream__, the arrow_stream protocol), and
pl.Series(obj) imports an object that offers __arrow_c_array__ or __arrow_c_stream__ and keeps
the producer's buffers. A Series is one 1-D column (only the `flat`, `offset` and
`empty` layouts) of no complex or bfloat16 type, and immutable (always read-only). build() makes
a Series of its own copy, for the probe tests.
"""

import _probekit

NAME = "polars"

pl = None

# How a reproducer spells polars (probes/README.md, "Reproducers"): the import, read back through
# to_list(); a Series is 1-D.
REPRO = {
    "import": "import polars as pl\nimport numpy as np",
    "ns": "pl",
    "build": "pl.Series(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"arrow": "pl.Series({obj})", "arrow_stream": "pl.Series({obj})"},
    "tolist": "{y}.to_list()",
    "dtype": "str({y}.to_numpy().dtype)",
    "shape": "({y}.len(),)",
    "compute": lambda dtype: "{y}.reverse().reverse()",
}


def load():
    global pl
    import polars as _pl

    pl = _pl
    return _probekit.arrow_column_info(
        pl.__version__,
        column="a polars Series",
        exports=_probekit.exports("arrow_stream"),
        # pl.Series takes __arrow_c_array__ and __arrow_c_stream__ objects and keeps their
        # buffers (polars #17693)
        imports=_probekit.imports({"arrow": "polars.Series(obj)",
                                   "arrow_stream": "polars.Series(obj)"},
                                  zero_copy=True, readonly="always"),
        # y * 1 is no operation to polars: it hands back the same buffer
        compute=_probekit.compute_info("y.reverse().reverse()"),
    )


def build(data, dtype, ops, readonly=False):
    import numpy as np

    x = pl.Series(_probekit.numpy_from_bytes(np, data, dtype).copy())
    return _probekit.column_slice(x, ops, pl.Series.len, "a Series")


def describe(x):
    # to_arrow() is the Series' own buffer (zero-copy for one chunk), with its offset
    if x.n_chunks() > 1:
        x = x.rechunk()  # a stream's several arrays: joined into one buffer the Series keeps
    arrow = x.to_arrow()
    dtype = _probekit.arrow_dtype_name(arrow.type)
    # the Series' own validity bitmap, through the same zero-copy to_arrow()
    validity = _probekit.arrow_validity(arrow)
    if dtype == "bool":
        # bit-packed: no byte per element to point at; the elements go over as bytes (a null
        # as False: only the valid ones are compared)
        return _probekit.contents_description(x.fill_null(False).to_numpy(), dtype) | {
            "validity": validity}
    data = arrow.buffers()[1]
    address = data.address + arrow.offset * _probekit.ITEMSIZE[dtype] if len(arrow) else 0
    return _probekit.pointer_description(address, [len(arrow)], None, dtype, True) | {
        "validity": validity}


def consume(obj, protocol, dtype):
    return pl.Series(obj)


def compute(y):
    # two of polars' gather kernels: every element read from the import, into new buffers
    return y.reverse().reverse()
