"""Numba's CUDA device arrays (numba-cuda's DeviceNDArray).

Without a usable CUDA driver numba.cuda is importable but not available: load() then declares no
devices and says why. On a GPU, arrays come from cuda.to_device and are shaped with numba's own
view operations (reshape of contiguous arrays, transpose, slicing with steps, negative steps);
broadcasting makes no view, and there is no bfloat16 or float16 NumPy-side dtype mapping for
every case (bfloat16 is left out). DeviceNDArray exports __cuda_array_interface__ version 3 with
its stream and has no __dlpack__; cuda.as_cuda_array imports the interface without a copy.
Not run on a GPU by this project's CI (it has none): written against numba-cuda's API.
"""

import _probekit

cuda = None
np = None


def _repro_reshape(shape):
    # build()'s spelling: the dimensions as arguments, () for the 0-d array
    return f"x = x.reshape({', '.join(str(n) for n in shape)})" if shape else "x = x.reshape(())"


# How a reproducer spells numba's device arrays (probes/README.md, "Reproducers"): to_device of
# a NumPy array, as in build(), and copy_to_host() to read them. No zero-stride view (no
# broadcast). No GPU reproducer is written yet.
REPRO = {
    "import": "import numpy as np\nfrom numba import cuda",
    "ns": "cuda",
    "build": "cuda.to_device(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    "reshape": _repro_reshape,
    "broadcast": None,
    "consume": {"cuda_array_interface": "cuda.as_cuda_array({obj})"},
    "tolist": "{y}.copy_to_host().tolist()",
    "pointer": "{y}.device_ctypes_pointer.value or 0",
}


def load():
    global cuda, np
    import numba
    import numpy as _np
    from numba import cuda as _cuda

    cuda, np = _cuda, _np
    # numba raises CudaSupportError where there is no usable device
    devices, notes = _probekit.cuda_only(
        _find_gpu, "no usable CUDA device: numba.cuda.is_available() is False")
    return _probekit.load_info(
        numba.__version__,
        devices=devices,
        missing=notes | {
            "bfloat16": "numba device arrays take NumPy dtypes; NumPy has no native bfloat16",
            "broadcast": "DeviceNDArray has no zero-stride view (broadcasting copies)",
            "broadcast_inner": "DeviceNDArray has no zero-stride view (broadcasting copies)",
            "unit_dims_odd": "not built by this probe: untested without a GPU",
        },
        exports=_probekit.exports("cuda_array_interface", devices=["cuda"]),
        # as_cuda_array wraps the exporter's memory and keeps a reference to it
        imports=_probekit.imports({"cuda_array_interface": "numba.cuda.as_cuda_array(obj)"},
                                  zero_copy=True, readonly=False, devices=["cuda"]),
    )


def _find_gpu():
    if not cuda.is_available():
        return False
    cuda.current_context()
    return True


def build(data, dtype, ops, readonly=False, device="cpu"):
    _probekit.require_cuda(device)
    on_device = cuda.to_device(_probekit.numpy_from_bytes(np, data, dtype))
    # numba's reshape takes the dimensions as arguments; transpose and slicing are NumPy's
    return _probekit.apply_ops(
        on_device, ops, reshape=lambda x, shape: x.reshape(*shape) if shape else x.reshape(())
    )


def describe(x):
    return _probekit.pointer_description(
        x.device_ctypes_pointer.value or 0, x.shape, x.strides, _probekit.dtype_name(x.dtype),
        False, device=("cuda", cuda.get_current_device().id),
    )


def stream(x):
    handle = getattr(x.stream, "handle", None)
    return int(getattr(handle, "value", handle) or 0)


def consume(obj, protocol, dtype):
    return cuda.as_cuda_array(obj)
