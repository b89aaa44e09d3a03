"""Dask arrays, as a consumer: dask.array.asarray(obj) over an object offering __array__.

A Dask array is a lazy graph of chunks: asarray(obj) calls obj.__array__() once and chunks the
result; running the graph makes a new NumPy array. Its elements are read by running it
(describe() hands over their bytes), so whether the import shares the producer's memory cannot
be checked, and a Dask array is not written in place: no write(). build() makes one Dask array
from its own NumPy copy, for the probe tests; Dask is not a producer here (its __array__ is a
compute(), a new array every time).
"""

import _probekit

NAME = "dask"

da = None
dask_get = None
np = None

REPRO = {
    "import": "import dask.array as da\nimport numpy as np",
    "ns": "np",
    "build": "da.asarray(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    **_probekit.repro_views(),
    "consume": {"array": "da.asarray({obj})"},
    "tolist": "{y}.compute().tolist()",
    "compute": lambda dtype: ("da.bitwise_or({y}, False)" if dtype == "bool"
                              else "da.multiply({y}, {y}.dtype.type(1))"
                              if dtype in _probekit.INT4_DTYPES else "da.multiply({y}, 1)"),
}


def load():
    global da, dask_get, np
    import dask
    import dask.array
    import numpy

    da, dask_get, np = dask.array, dask.get, numpy
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
            "dask.array.multiply(y, 1) (bitwise_or(y, False) for bool, multiply(y, "
            "y.dtype.type(1)) for int4 and uint4), its graph run by Dask's synchronous "
            "scheduler (dask.get)",
            missing={"bfloat16": "Dask's arithmetic on ml_dtypes' bfloat16 goes through float"}),
    )


def build(data, dtype, ops, readonly=False):
    if ops:
        raise NotImplementedError("a Dask array has no memory layout of its own")
    return da.asarray(_probekit.numpy_from_bytes(np, data, dtype).copy())


# A Dask array is computed here by running its own graph with Dask's synchronous scheduler,
# dask.get, through the collection protocol (__dask_graph__, __dask_keys__,
# __dask_postcompute__), as compute(scheduler="synchronous") does once it has the graph. What
# compute() does first is left out: the default threaded scheduler would hand a one-chunk graph
# to a thread pool (about a millisecond a call), and compute() turns the collection into an
# expression and simplifies it even with optimize_graph=False (0.4 ms a call on a one-chunk
# graph, which it leaves as it was). The tasks that run, and the memory they read, are the
# same. On `--consumer dask` the cases' own time went from 5.2 s to 3.1 s (describe() 1.25 s
# to 0.21 s, compute() 2.5 s to 1.6 s, most of what is left building y * 1's graph), with
# every outcome the same.
def run_graph(x):
    finalize, extra = x.__dask_postcompute__()
    return finalize(dask_get(x.__dask_graph__(), x.__dask_keys__()), *extra)


def describe(x):
    # running the graph is the one way to a Dask array's elements; the result does not
    # outlive this call, so its contents go over as bytes, in C order (asarray keeps a 0-d
    # array 0-d, where ascontiguousarray would make it 1-D)
    values = np.asarray(run_graph(x) if hasattr(x, "__dask_graph__") else x, order="C")
    return {"bytes": values.tobytes(), "shape": list(values.shape),
            "dtype": _probekit.dtype_name(values.dtype), "readonly": None,
            "device": list(_probekit.CPU)}


def consume(obj, protocol, dtype):
    return da.asarray(obj)


# The operation is Dask's ufunc multiply(y, 1), not y * 1: both run NumPy's multiply on the
# chunk with the scalar weakly typed, and give the same array; but `*` hands Dask
# operator.mul, whose signature Dask reads with inspect for each new array (does it take a
# dtype keyword?), parsed from the builtin's text signature each time. Outside a run, on 24
# float32 elements: building the graph took 380 us with `*` and 190 us with multiply; graph
# and run, 680 us and 390 us.
def compute(y):
    # Dask's graph of the elementwise kernel, run: a new NumPy array
    dtype = _probekit.dtype_name(y.dtype)
    if dtype == "bool":
        return run_graph(da.bitwise_or(y, False))
    # a Python int would make ml_dtypes' 4-bit integers int8 (_probekit.scalar_identity)
    one = y.dtype.type(1) if dtype in _probekit.INT4_DTYPES else 1
    return run_graph(da.multiply(y, one))
