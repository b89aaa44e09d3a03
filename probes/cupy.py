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
# array, as in build(), and come back with get() to be read. No GPU reproducer is written yet.
REPRO = {
    "import": "import cupy as cp\nimport numpy as np",
    "ns": "cp",
    "build": "cp.asarray(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    "consume": {
        "dlpack": "cp.from_dlpack({obj})",
        "dlpack_capsule": "cp.from_dlpack({obj})",
        "cuda_array_interface": "cp.asarray({obj})",
    },
    "tolist": "{y}.get().tolist()",
    "pointer": "{y}.data.ptr",
    "compute": _probekit.scalar_identity_repro,
    **_probekit.ITEM_REPRO,
}


def load():
    global cupy
    import cupy as _cupy

    cupy = _cupy
    # CuPy raises CUDARuntimeError where there is no usable device
    devices, notes = _probekit.cuda_only(_find_gpu)
    return _probekit.load_info(
        cupy.__version__,
        devices=devices,
        missing=notes | {"unit_dims_odd": "not built by this probe: untested without a GPU"},
        exports=_probekit.exports("dlpack", "cuda_array_interface", devices=["cuda"]),
        # from_dlpack and asarray of a CUDA array interface share memory (CuPy docs)
        imports=_probekit.imports(
            {"dlpack": "cupy.from_dlpack(obj)", "dlpack_capsule": "cupy.from_dlpack(capsule)",
             "cuda_array_interface": "cupy.asarray(obj)"},
            zero_copy=True, readonly=False, devices=["cuda"]),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
    )


def _find_gpu():
    if cupy.cuda.runtime.getDeviceCount() == 0:
        return False
    cupy.zeros(1)  # an allocation: what fails when the driver is missing or too old
    return True


def build(data, dtype, ops, readonly=False, device="cpu"):
    import numpy  # for the staging array (the library has imported NumPy already)

    _probekit.require_cuda(device)
    on_device = cupy.asarray(_probekit.numpy_from_bytes(numpy, data, dtype))
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


def compute(y):
    return _probekit.scalar_identity(y)


def read(x, index):
    return x[index].item()


def write(x, index, value):
    x[index] = value
