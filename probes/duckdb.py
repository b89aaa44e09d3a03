"""DuckDB, as a consumer of Arrow streams: duckdb.from_arrow(obj) over an object that offers
__arrow_c_stream__, read by a query.

DuckDB scans the stream when a query runs (it asks for a new stream on each scan), so consume()
runs one: fetchnumpy() of the relation, whose one column (a stream of an array is a table of one
column) is DuckDB's result, in memory of its own. It is not a producer here: its own arrays are
query results, which build() cannot lay out as the matrix asks. Cannot: read Arrow's halffloat
(DuckDB raises NotImplementedException), hold bfloat16 or complex.
"""

import _probekit

NAME = "duckdb"

duckdb = None
np = None

REPRO = {
    "import": "import duckdb\nimport numpy as np",
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {"arrow_stream": "next(iter(duckdb.from_arrow({obj}).fetchnumpy().values()))"},
    "pointer": "{y}.ctypes.data",
}


def load():
    global duckdb, np
    import duckdb as _duckdb
    import numpy

    duckdb, np = _duckdb, numpy
    return _probekit.load_info(
        duckdb.__version__,
        layouts=["flat"],
        layout_note="DuckDB's arrays are query results: build() makes flat ones only",
        missing={"bfloat16": "DuckDB has no bfloat16", "complex64": "DuckDB has no complex type",
                 "complex128": "DuckDB has no complex type"},
        exports={},
        # a query's result is DuckDB's own memory: a copy of the stream's arrays
        imports=_probekit.imports({"arrow_stream": "duckdb.from_arrow(obj).fetchnumpy()"},
                                  zero_copy=False, readonly=False),
    )


def build(data, dtype, ops, readonly=False):
    if ops:
        raise NotImplementedError("DuckDB's arrays are query results: no views")
    return _probekit.numpy_from_bytes(np, data, dtype).copy()


def describe(x):
    return _probekit.numpy_like_description(x, readonly=False)


def consume(obj, protocol, dtype):
    # the relation's one column, as the query that scans the stream returns it
    (column,) = duckdb.from_arrow(obj).fetchnumpy().values()
    return column
