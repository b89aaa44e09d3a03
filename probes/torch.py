"""PyTorch (CPU tensors).

Cannot: slice with a negative step (no `reversed` layout: torch.flip copies), make a tensor
read-only, or export __array_interface__, __array_struct__ or the buffer protocol (CPU tensors
have none of them). Its only buffer import, torch.frombuffer, is untyped (the caller names the
dtype) and needs a contiguous, non-empty buffer.
"""

import _probekit

NAME = "torch"

torch = None


def load():
    global torch
    import torch as _torch
    import torch.utils.dlpack  # noqa: F401  (to_dlpack lives there)

    torch = _torch
    return {
        "version": torch.__version__,
        "devices": ["cpu"],
        "dtypes": list(_probekit.DTYPES),
        "layouts": [layout for layout in _probekit.LAYOUTS if layout != "reversed"],
        "notes": {"reversed": "torch slicing refuses negative steps; torch.flip copies"},
        "readonly": False,
        "exports": {
            "dlpack": {"call": "x.__dlpack__"},
            "dlpack_capsule": {"call": "torch.utils.dlpack.to_dlpack(x)"},
            "array": {"call": "x.__array__"},
        },
        "imports": {
            "dlpack": {
                "call": "torch.from_dlpack(obj)",
                "zero_copy": True,
                "typed": True,
                "readonly": False,
            },
            "dlpack_capsule": {
                "call": "torch.from_dlpack(capsule)",
                "zero_copy": True,
                "typed": True,
                "readonly": False,
            },
            # torch.frombuffer documents that the tensor shares the buffer's memory; it reads
            # raw bytes, so the dtype comes from the caller.
            "buffer": {
                "call": "torch.frombuffer(obj, dtype=dtype)",
                "zero_copy": True,
                "typed": False,
                "readonly": False,
            },
        },
    }


def _base(data, dtype):
    td = getattr(torch, dtype)
    if not data:
        # torch.frombuffer refuses an empty buffer
        return torch.empty(0, dtype=td)
    # frombuffer shares the bytearray; clone() moves the data into torch's own memory
    return torch.frombuffer(bytearray(data), dtype=td).clone()


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(
        _base(data, dtype),
        ops,
        permute=lambda x, perm: x.permute(*perm),
        broadcast=lambda x, shape: x.expand(*shape),
    )


def describe(x):
    size = x.element_size()
    return _probekit.pointer_description(
        x.data_ptr(),
        x.shape,
        [s * size for s in x.stride()],
        _probekit.dtype_name(x.dtype),
        False,
    )


def export(x, protocol):
    if protocol == "dlpack_capsule":
        return torch.utils.dlpack.to_dlpack(x)
    return x


def consume(obj, protocol, dtype):
    if protocol == "buffer":
        return torch.frombuffer(obj, dtype=getattr(torch, dtype))
    return torch.from_dlpack(obj)
