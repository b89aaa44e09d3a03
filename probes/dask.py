"""Dask arrays, as a consumer: dask.array.asarray(obj) over an object offering __array__.

A Dask array is a lazy graph of chunks: asarray(obj) calls obj.__array__() once and chunks the
result; compute() runs the graph into a new NumPy array. Its elements are read through compute()
(describe() hands over their bytes), so whether the import shares the producer's memory cannot
be checked, and a Dask array is not written in place: no write(). build() makes one Dask array
from its own NumPy copy, for the probe tests; Dask is not a producer here (its __array__ is a
compute(), a new array every time).
"""

import _probekit

NAME = "dask"

da = None
np = None

REPRO = {
    "import": "import dask.array as da\nimport numpy as np",
    "ns": "np",
    "build": "da.asarray(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    **_probekit.repro_views(),
    "consume": {"array": "da.asarray({obj})"},
    "tolist": "{y}.compute().tolist()",
    "compute": lambda dtype: "({y} | False)" if dtype == "bool" else "({y} * 1)",
}


def load():
    global da, np
    import dask
    import dask.array
    import numpy

    da, np = dask.array, numpy
    return _probekit.load_info(
        dask.__version__,
        layouts=["flat"],
        layout_note="a Dask array has no memory layout of its own: build() makes flat ones only",
        exports={},
        # asarray wraps np.asarray(obj), __array__'s result, in a one-chunk graph; a Dask
        # array has no read-only flag to keep
        imports=_probekit.imports({"array": "dask.array.asarray(obj)"}, zero_copy=False,
                                  readonly=False),
        compute=_probekit.compute_info(
            '(y * 1).compute(scheduler="synchronous", optimize_graph=False) (y | False for bool)',
            missing={"bfloat16": "Dask's arithmetic on ml_dtypes' bfloat16 goes through float"}),
    )


def build(data, dtype, ops, readonly=False):
    if ops:
        raise NotImplementedError("a Dask array has no memory layout of its own")
    return da.asarray(_probekit.numpy_from_bytes(np, data, dtype).copy())


# The graph runs in the calling thread: the default threaded scheduler hands a one-chunk graph
# to a thread pool, which costs about a millisecond a call and runs the same tasks on the same
# memory (the thread that reads the import is not what an exchange is judged on). Nor is the
# graph optimised first: on a one-chunk graph that rewrites nothing and costs 0.4 ms a call
# (a third of describe()'s compute), and the tasks that run are the same.
_COMPUTE = {"scheduler": "synchronous", "optimize_graph": False}


def describe(x):
    # compute() is the one way to a Dask array's elements; a computed array does not outlive
    # this call, so its contents go over as bytes, in C order (asarray keeps a 0-d array 0-d,
    # where ascontiguousarray would make it 1-D)
    values = np.asarray(x.compute(**_COMPUTE) if hasattr(x, "compute") else x,
                        order="C")
    return {"bytes": values.tobytes(), "shape": list(values.shape),
            "dtype": _probekit.dtype_name(values.dtype), "readonly": None,
            "device": list(_probekit.CPU)}


def consume(obj, protocol, dtype):
    return da.asarray(obj)


def compute(y):
    # Dask's graph of the elementwise kernel, run: a new NumPy array
    return (_probekit.scalar_identity(y)).compute(**_COMPUTE)
