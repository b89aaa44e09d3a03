"""PaddlePaddle (CPU tensors, stride mode: reshape, transpose and slicing are views).

Cannot: make uint16/uint32/uint64 tensors (no CPU kernels; paddle reads a NumPy uint16 array as
bfloat16), broadcast without copying (paddle.broadcast_to and expand allocate), or make a tensor
read-only. No __array_interface__, __array_struct__ or buffer protocol export, and paddle.to_tensor
accepts only NumPy arrays, lists and buffers, not objects that merely offer __array_interface__,
__array_struct__ or __array__. With paddlepaddle-gpu, tensors are also built on the GPU
(CUDAPlace(0)) and exchanged over DLPack and the CUDA Array Interface; that side has not run in
this project's CI (no GPU).
"""

import _probekit

NAME = "paddle"

paddle = None


def _repro_build(dtype, ops, readonly):
    # build()'s steps from a list: a NumPy array, paddle.to_tensor on the CPU, then the views
    if readonly:
        raise NotImplementedError("paddle cannot make a read-only tensor")
    if dtype == "bfloat16":
        lines = [
            "# paddle takes bfloat16 data only as raw bits in a NumPy uint16 array: the top half",
            "# of each float32 (exact here, the values being small integers)",
            "bits = (np.array(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)",
            'x = paddle.to_tensor(bits, place="cpu")',
        ]
    else:
        np_dtype = _probekit.numpy_dtype_text(dtype)
        lines = [f'x = paddle.to_tensor(np.array(values, dtype={np_dtype}), place="cpu")']
    for name, arg in ops:
        if name == "slice":
            lines.append(f"x = x[{_probekit.slice_text(arg)}]")
        elif name in ("reshape", "permute"):
            method = "reshape" if name == "reshape" else "transpose"
            lines.append(f"x = x.{method}({list(arg)})")
        else:
            raise NotImplementedError("paddle has no zero-stride broadcast view")
    return lines


# How a reproducer spells paddle (probes/README.md, "Reproducers"). Tensor.tolist() gives the
# raw bits of bfloat16 elements, hence the cast there. No read-only tensors.
REPRO = {
    "import": "import numpy as np\nimport paddle\nimport paddle.utils.dlpack",
    "ns": "paddle",
    "build": _repro_build,
    "export": {"dlpack_capsule": "paddle.utils.dlpack.to_dlpack(x)"},
    "consume": {
        "dlpack": "paddle.from_dlpack({obj})",
        "dlpack_capsule": "paddle.utils.dlpack.from_dlpack({obj})",
        "cuda_array_interface": "paddle.to_tensor({obj})",
    },
    "tolist": '({y}.astype("float32") if {y}.dtype == paddle.bfloat16 else {y}).tolist()',
    "pointer": "{y}.data_ptr()",
    "compute": lambda dtype: "paddle.logical_or({y}, {y})" if dtype == "bool" else "{y} * 1",
    **_probekit.ITEM_REPRO,
}

def load():
    global paddle
    import paddle as _paddle
    import paddle.utils.dlpack  # noqa: F401

    paddle = _paddle
    no_uint = "paddle has no CPU kernels for this dtype (paddle.zeros/to_tensor refuse it)"
    if not paddle.is_compiled_with_cuda():
        why_not = "this paddlepaddle is the CPU build (paddlepaddle-gpu has CUDA)"
    elif paddle.device.cuda.device_count() == 0:
        why_not = "no usable CUDA device: paddle.device.cuda.device_count() is 0"
    else:
        why_not = None
    devices, gpu_notes = _probekit.cpu_and_cuda(why_not is None, why_not)
    shares = {"zero_copy": True, "readonly": False}
    return _probekit.load_info(
        paddle.__version__,
        devices=devices,
        # no CPU kernels for the wider unsigned integers, and uint16 data reads as bfloat16
        missing={
            "uint16": "paddle reads uint16 data as bfloat16 and has no uint16 kernels",
            "uint32": no_uint,
            "uint64": no_uint,
            "broadcast": "paddle.broadcast_to and Tensor.expand copy instead of a zero stride",
            "broadcast_inner": "paddle.broadcast_to and Tensor.expand copy instead of a zero "
                               "stride",
            "unit_dims_odd": "paddle.as_strided " + _probekit.UNIT_STRIDE_NOTE,
            "ndim32": "paddle tensors have at most 9 dimensions",
        }
        | gpu_notes,
        exports=_probekit.exports("dlpack", dlpack_capsule="paddle.utils.dlpack.to_dlpack(x)")
        | _probekit.exports("array", devices=["cpu"])
        # GPU tensors export version 2 of the interface (Paddle#68192)
        | _probekit.exports("cuda_array_interface", devices=["cuda"]),
        # Its docstring: "The returned Paddle tensor will share the memory with the tensor
        # from given dlpack."
        imports=_probekit.imports({"dlpack": "paddle.from_dlpack(obj)",
                                   "dlpack_capsule": "paddle.utils.dlpack.from_dlpack(capsule)"},
                                  **shares, devices=devices)
        # paddle.to_tensor of a CUDA array interface shares its memory (Paddle#69913)
        | _probekit.imports({"cuda_array_interface": "paddle.to_tensor(obj)"}, **shares,
                            devices=["cuda"]),
        compute=_probekit.compute_info("y * 1 (paddle.logical_or(y, y) for bool)",
                                       missing=dict.fromkeys(("uint32", "uint64"), no_uint)
                                       | dict.fromkeys(_probekit.FLOAT8_DTYPES, "paddle has "
                                                       "no CPU kernels for float8 arithmetic")),
        # No buffer import: paddle.to_tensor takes memoryview, bytes and NumPy arrays by
        # type, and refuses any other exporter of the buffer protocol with a TypeError.
        from_dlpack_keywords=_probekit.keywords_taken(paddle.from_dlpack, ("copy", "device")),
    )


def build(data, dtype, ops, readonly=False, device="cpu"):
    import numpy  # for the staging array (the library has imported NumPy already)

    staged = _probekit.numpy_from_bytes(numpy, data, dtype)
    if dtype == "bfloat16":
        # paddle takes bfloat16 data only as the raw bits in a NumPy uint16 array
        staged = staged.view("uint16")
    # to_tensor copies into paddle's allocator
    x = paddle.to_tensor(staged, place=paddle.CUDAPlace(0) if device == "cuda" else "cpu")
    if str(x.dtype) != "paddle." + dtype:
        raise TypeError(f"paddle made {x.dtype} from {dtype} data")
    return _probekit.apply_ops(
        x,
        ops,
        reshape=lambda y, shape: y.reshape(list(shape)),
        permute=lambda y, perm: y.transpose(list(perm)),
    )


def describe(x):
    size = x.element_size()
    place = x.place
    device = ("cuda", place.gpu_device_id()) if place.is_gpu_place() else None
    return _probekit.pointer_description(
        x.data_ptr(), x.shape, [s * size for s in x.strides], _probekit.dtype_name(x.dtype), False,
        device=device,
    )


def stream(x):
    return paddle.device.current_stream().cuda_stream


def export(x, protocol):
    return _probekit.capsule_or_self(x, protocol, paddle.utils.dlpack.to_dlpack)


def consume(obj, protocol, dtype, **keywords):
    if "device" in keywords:  # paddle names CUDA devices gpu:N
        keywords["device"] = keywords["device"].replace("cuda", "gpu")
    if protocol == "dlpack":
        return paddle.from_dlpack(obj, **keywords)
    if protocol == "dlpack_capsule":
        return paddle.utils.dlpack.from_dlpack(obj)
    if protocol == "cuda_array_interface":
        return paddle.to_tensor(obj)
    raise ValueError(f"the paddle probe imports no {protocol}")


def compute(y):
    # paddle's | takes no Python bool (bitwise_or wants a Tensor), so bool goes through
    # logical_or with itself, which is y again
    if _probekit.dtype_name(y.dtype) == "bool":
        return paddle.logical_or(y, y)
    return y * 1


def read(x, index):
    return x[index].item()


def write(x, index, value):
    x[index] = value
