"""PyTorch (CPU tensors, and CUDA tensors where torch.cuda.is_available()).

Cannot: slice with a negative step (no `reversed` layout: torch.flip copies), make a tensor
read-only, or export __array_interface__, __array_struct__ or the buffer protocol (CPU tensors
have none of them). Its only buffer import, torch.frombuffer, is untyped (the caller names the
dtype) and needs a contiguous, non-empty buffer. On a GPU, CUDA tensors also export
__cuda_array_interface__ (version 2: no stream key), and torch.as_tensor(obj, device="cuda")
imports it without a copy; stream() is torch.cuda.current_stream(). The CUDA side ran on an H100
(torch 2.11) on 2026-11-26; CI has no GPU.
"""

import _probekit

NAME = "torch"

torch = None

# How a reproducer spells PyTorch (probes/README.md, "Reproducers").
REPRO = {
    "import": "import torch\nimport torch.utils.dlpack",
    "ns": "torch",
    # torch.tensor cannot store into its 4-bit integers: they are viewed from 8-bit ones
    "build": {"default": "torch.tensor(values, dtype={dtype})",
              "int4": "torch.tensor(values, dtype=torch.int8).view(torch.int4)",
              "uint4": "torch.tensor(values, dtype=torch.uint8).view(torch.uint4)"},
    "permute": "{x} = {x}.permute{perm}",
    "broadcast": "{x} = {x}.expand{shape}",
    "neg_view": ("{x} = torch._neg_view(-{x}) if {x}.is_signed() and not "
                 "({x}.element_size() == 1 and {x}.is_floating_point()) "
                 "and {x}.dtype not in (torch.int4, torch.uint4) else {x}"),
    "conj_view": "{x} = {x}.conj_physical().conj() if {x}.is_complex() else {x}",
    "requires_grad": ("{x} = {x}.requires_grad_() if {x}.is_floating_point() or {x}.is_complex() "
                      "else {x}"),
    "subclass": "{x} = torch.nn.Parameter({x}, requires_grad=False)",
    "export": {"dlpack_capsule": "torch.utils.dlpack.to_dlpack(x)"},
    "consume": {
        "dlpack": "torch.from_dlpack({obj})",
        "dlpack_capsule": "torch.from_dlpack({obj})",
        "buffer": "torch.frombuffer({obj}, dtype={dtype})",
    },
    "pointer": "{y}.data_ptr()",
    "c_api_type": "torch.Tensor",
    "compute": _probekit.scalar_identity_repro,
    **_probekit.ITEM_REPRO,
}


def load():
    global torch
    import torch as _torch
    import torch.utils.dlpack  # noqa: F401  (to_dlpack lives there)

    torch = _torch
    devices, gpu_notes = _probekit.cpu_and_cuda(
        torch.cuda.is_available(),
        "torch.cuda.is_available() is False: no CUDA driver or device here")
    shares = {"zero_copy": True, "readonly": False}
    c_api = _probekit.dlpack_c_api(torch.Tensor)
    return _probekit.load_info(
        torch.__version__,
        lazy_views=True,
        tensor_variants=True,
        devices=devices,
        missing={"reversed": "torch slicing refuses negative steps; torch.flip copies",
                 "unit_dims_odd": "torch.as_strided " + _probekit.UNIT_STRIDE_NOTE}
        | gpu_notes,
        exports=_probekit.exports("dlpack", dlpack_capsule="torch.utils.dlpack.to_dlpack(x)")
        # torch.Tensor publishes the DLPack C exchange API (torch 2.10 and later)
        | {"dlpack": {"call": _probekit.EXPORT_CALLS["dlpack"], **c_api}}
        # __array__ calls .numpy(), which CUDA tensors refuse
        | _probekit.exports("array", devices=["cpu"])
        | _probekit.exports("cuda_array_interface", devices=["cuda"]),
        imports=_probekit.imports(
            {"dlpack": "torch.from_dlpack(obj)", "dlpack_capsule": "torch.from_dlpack(capsule)"},
            **shares, devices=devices)
        # torch.as_tensor shares the memory of a CUDA array interface (pytorch#20584)
        | _probekit.imports({"cuda_array_interface": "torch.as_tensor(obj, device='cuda')"},
                            **shares, devices=["cuda"])
        # torch.frombuffer documents that the tensor shares the buffer's memory; it reads
        # raw bytes, so the dtype comes from the caller.
        | _probekit.imports({"buffer": "torch.frombuffer(obj, dtype=dtype)"}, **shares,
                            typed=False),
        compute=_probekit.compute_info(
            _probekit.SCALAR_IDENTITY_CALL,
            missing=dict.fromkeys(_probekit.FLOAT8_DTYPES, "torch has no CPU arithmetic on its "
                                  "float8 types (mul_cpu_reduced_float is not implemented)")
            | dict.fromkeys(_probekit.INT4_DTYPES, "torch has no arithmetic on int4 and uint4 (they "
                            "are shell dtypes: even a copy is not implemented)")),
        float8=True,
        int4=True,
        from_dlpack_keywords=_probekit.keywords_taken(torch.from_dlpack, ("copy", "device"))
        + (("c_api",) if c_api else ()),
    )


def _base(data, dtype):
    td = getattr(torch, dtype)
    # torch cannot copy its 4-bit integers (they are shell dtypes): the bytes are copied as
    # 8-bit ones and viewed as 4-bit, which is how torch users make them
    staged = torch.uint8 if dtype in _probekit.INT4_DTYPES else td
    if not data:
        # torch.frombuffer refuses an empty buffer
        base = torch.empty(0, dtype=staged)
    else:
        # frombuffer shares the bytearray; clone() moves the data into torch's own memory
        base = torch.frombuffer(bytearray(data), dtype=staged).clone()
    return base.view(td) if staged is not td else base


def build(data, dtype, ops, readonly=False, device="cpu"):
    base = _base(data, dtype)
    if device == "cuda":
        base = base.to("cuda")
    return _probekit.apply_ops(
        base,
        ops,
        permute=lambda x, perm: x.permute(*perm),
        broadcast=lambda x, shape: x.expand(*shape),
        neg_view=_neg_view,
        conj_view=_conj_view,
        requires_grad=_requires_grad,
        subclass=lambda x, _: torch.nn.Parameter(x, requires_grad=False),
    )


# The lazy views: memory that holds the negated (conjugated) elements under torch's negative
# (conjugate) bit, so that the tensor's values are x's. A dtype without a negation (bool, the
# unsigned ones, the 8-bit floats) and a real dtype without a conjugation stay as they are.
def _neg_view(x, _):
    if x.element_size() == 1 and x.is_floating_point() or x.dtype in (torch.int4, torch.uint4):
        return x  # torch cannot negate its 8-bit floats or 4-bit integers: no lazy view arises
    return torch._neg_view(-x) if x.is_signed() else x


def _conj_view(x, _):
    return x.conj_physical().conj() if x.is_complex() else x


# A tensor recording gradients: autograd's leaf over the same memory. Only floating and complex
# dtypes have gradients; the others stay as they are.
def _requires_grad(x, _):
    if not (x.is_floating_point() or x.is_complex()):
        return x
    return x.detach().requires_grad_()


def describe(x):
    size = x.element_size()
    return _probekit.pointer_description(
        x.data_ptr(),
        x.shape,
        [s * size for s in x.stride()],
        _probekit.dtype_name(x.dtype),
        False,
        device=("cuda", x.device.index) if x.device.type == "cuda" else None,
    )


def stream(x):
    return torch.cuda.current_stream(x.device).cuda_stream


def export(x, protocol):
    return _probekit.capsule_or_self(x, protocol, torch.utils.dlpack.to_dlpack)


def consume(obj, protocol, dtype, **keywords):
    if keywords.pop("c_api", False):
        return _probekit.c_api_import(torch.Tensor, obj)
    if protocol == "buffer":
        return torch.frombuffer(obj, dtype=getattr(torch, dtype))
    if protocol == "cuda_array_interface":
        return torch.as_tensor(obj, device="cuda")
    return torch.from_dlpack(obj, **keywords)  # device= takes "cpu" and "cuda:0" as they are


def compute(y):
    return _probekit.scalar_identity(y)


def read(x, index):
    return x[index].item()


def write(x, index, value):
    x[index] = value
