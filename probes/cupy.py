"""CuPy: arrays in CUDA device memory.

`import cupy` works on a machine without a GPU, but every allocation then fails, so load() asks
the runtime for a device and, without one, declares no devices and says why in notes["cuda"]:
its cases are reported as not run, with that reason. On a GPU it builds every dtype (bfloat16
through ml_dtypes) and every layout as views, exports __cuda_array_interface__ (version 3, with
its current stream) and __dlpack__ (kDLCUDA), and imports both: cupy.asarray takes the CUDA
Array Interface without a copy, cupy.from_dlpack takes DLPack objects and capsules.
Not run on a GPU by this project's CI (it has none): written against CuPy's documented API.
"""

import _probekit

cupy = None

# How a reproducer spells CuPy (probes/README.md, "Reproducers"): the values go up from a NumPy
# array, as in build(), and come back with get() to be read. Not run by this project (no GPU).
REPRO = {
    "import": "import cupy as cp\nimport numpy as np",
    "ns": "cp",
    "build": "cp.asarray(np.array(values, dtype={dtype}))",
    "dtype_name": "np.{dtype}",
    "dtypes": {"bfloat16": "ml_dtypes.bfloat16", "bool": "np.bool_"},
    "consume": {
        "dlpack": "cp.from_dlpack({obj})",
        "dlpack_capsule": "cp.from_dlpack({obj})",
        "cuda_array_interface": "cp.asarray({obj})",
    },
    "tolist": "{y}.get().tolist()",
    "pointer": "{y}.data.ptr",
    "extra_imports": {"ml_dtypes.": "import ml_dtypes"},
}


def load():
    global cupy
    import cupy as _cupy

    cupy = _cupy
    devices, notes = [], {}
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            cupy.zeros(1)  # an allocation: what fails when the driver is missing or too old
            devices = ["cuda"]
    except Exception as exc:  # the reason is the point: CuPy raises CUDARuntimeError
        notes["cuda"] = _probekit.cuda_note(exc)
    on_gpu = {"devices": ["cuda"]}
    # from_dlpack and asarray of a CUDA array interface share memory (CuPy docs)
    shares = {"zero_copy": True, "typed": True, "readonly": False, **on_gpu}
    return {
        "version": cupy.__version__,
        "devices": devices,
        "dtypes": list(_probekit.DTYPES),
        "layouts": list(_probekit.LAYOUTS),
        "notes": notes,
        "readonly": False,
        "exports": {
            "dlpack": {"call": "x.__dlpack__", **on_gpu},
            "cuda_array_interface": {"call": "x.__cuda_array_interface__", **on_gpu},
        },
        "imports": {
            "dlpack": {"call": "cupy.from_dlpack(obj)", **shares},
            "dlpack_capsule": {"call": "cupy.from_dlpack(capsule)", **shares},
            "cuda_array_interface": {"call": "cupy.asarray(obj)", **shares},
        },
    }


def build(data, dtype, ops, readonly=False, device="cpu"):
    _probekit.require_cuda(device)
    on_device = cupy.asarray(_probekit.numpy_from_bytes(data, dtype))
    return _probekit.apply_ops(on_device, ops, xp=cupy)


def describe(x):
    return _probekit.pointer_description(
        x.data.ptr, x.shape, x.strides, _probekit.dtype_name(x.dtype), False,
        device=("cuda", x.device.id),
    )


def stream(x):
    with x.device:
        return cupy.cuda.get_current_stream().ptr


def consume(obj, protocol, dtype):
    if protocol == "cuda_array_interface":
        return cupy.asarray(obj)
    return cupy.from_dlpack(obj)
