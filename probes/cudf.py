"""cuDF (RAPIDS): GPU columns as 1-D Series.

cuDF needs an NVIDIA GPU at run time and is not in the default library set (install cudf-cu13 on
a GPU machine); without it this probe's import error is what `interopcheck list` shows. A Series
is one contiguous column, so only the 1-D layouts exist. It exports the CUDA Array Interface
(version 3, through the column) and legacy capsules from Series.to_dlpack() (a deep copy, which
is how cuDF documents it), and imports the interface with cudf.Series(obj) and capsules with
cudf.from_dlpack(capsule), both copying. Written against cuDF's documented API; it has not run
in this project's CI, which has no GPU.
"""

import _probekit

cudf = None

# the column types cuDF exchanges: no float16, bfloat16 or complex
NUMERIC = _probekit.dtypes_except("float16", "bfloat16", "complex64", "complex128")


def _repro_slice(triples):
    # build()'s only view: a unit-step slice of the rows with iloc
    if len(triples) != 1 or triples[0][2] not in (None, 1):
        raise NotImplementedError(f"a Series cannot express slice {triples} as a view")
    return f"x = x.iloc[{_probekit.slice_text(triples)}]"


# How a reproducer spells cuDF (probes/README.md, "Reproducers"): a Series of a NumPy array, as
# in build(), read back through to_numpy() (a 2-D DLPack import is a DataFrame, which has it
# too). A Series is one column: no reshape, permute or broadcast. Not run by this project (no
# GPU).
REPRO = {
    "import": "import cudf\nimport numpy as np",
    "ns": "cudf",
    "build": "cudf.Series(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    **_probekit.repro_views(slice=_repro_slice),
    "export": {"dlpack_capsule": "x.to_dlpack()"},
    "consume": {
        "cuda_array_interface": "cudf.Series({obj})",
        "dlpack_capsule": "cudf.from_dlpack({obj})",
    },
    "tolist": "{y}.to_numpy().tolist()",
    "compute": _probekit.scalar_identity_repro,
}


def load():
    global cudf
    import cudf as _cudf

    cudf = _cudf
    devices, notes = _probekit.cuda_only(_find_gpu)
    return _probekit.load_info(
        cudf.__version__,
        devices=devices,
        dtypes=NUMERIC,
        dtype_note="cuDF columns have no such type over these protocols",
        layouts=["flat", "offset", "empty"],
        layout_note="a Series is one contiguous 1-D column",
        missing=notes,
        exports=_probekit.exports(devices=["cuda"],
                                  cuda_array_interface="Series.__cuda_array_interface__",
                                  dlpack_capsule="Series.to_dlpack()"),
        # both imports copy into a new column
        imports=_probekit.imports({"cuda_array_interface": "cudf.Series(obj)",
                                   "dlpack_capsule": "cudf.from_dlpack(capsule)"},
                                  zero_copy=False, readonly=False, devices=["cuda"]),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
    )


def _find_gpu():
    cudf.Series([1])  # an allocation: what fails without a device, or with a driver too old
    return True


def build(data, dtype, ops, readonly=False, device="cpu"):
    import numpy  # for the staging array (the library has imported NumPy already)

    _probekit.require_cuda(device)
    series = cudf.Series(_probekit.numpy_from_bytes(numpy, data, dtype))
    for name, arg in ops:
        if name != "slice" or len(arg) != 1 or arg[0][2] not in (None, 1):
            raise NotImplementedError(f"a Series cannot express {name} {arg} as a view")
        series = series.iloc[arg[0][0]:arg[0][1]]
    return series


def describe(x):
    # The column's own buffer, not its __cuda_array_interface__ (the protocol under test);
    # a sliced Series keeps its column's buffer and an element offset.
    column = x._column
    address = column.data_ptr + column.offset * x.dtype.itemsize if len(x) else 0
    return _probekit.pointer_description(
        address, (len(x),), None, _probekit.dtype_name(x.dtype), False, device=("cuda", 0)
    )


def export(x, protocol):
    return _probekit.capsule_or_self(x, protocol, lambda series: series.to_dlpack())


def consume(obj, protocol, dtype):
    if protocol == "dlpack_capsule":
        return cudf.from_dlpack(obj)
    return cudf.Series(obj)


def compute(y):
    return _probekit.scalar_identity(y)
