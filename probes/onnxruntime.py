"""ONNX Runtime's OrtValue: the tensors an inference session takes and returns.

An OrtValue is dense and row-major (only `DENSE_LAYOUTS`); ortvalue_from_numpy wraps a NumPy
array's memory on the CPU, which is how build() makes one from its own copy of the bytes. It
exports DLPack (__dlpack__, legacy capsules) and __array__, and imports with
OrtValue.from_dlpack(obj), which calls obj.__dlpack__() without keywords (so always a legacy
capsule) and shares the producer's memory. Cannot: hold complex numbers (ONNX Runtime has no
complex tensors), be built from NumPy's bfloat16 (ml_dtypes; ortvalue_from_numpy refuses it),
or say whether its memory is read-only. Without a model it has no operation of its own, so it
offers no compute().
"""

import _probekit

NAME = "onnxruntime"

ort = None
np = None

# OrtValue.data_type() names: "tensor(float)" and so on
ORT_DTYPES = {"float": "float32", "double": "float64", "float8e4m3fn": "float8_e4m3fn",
              "float8e5m2": "float8_e5m2"}

REPRO = {
    "import": "import onnxruntime as ort\nimport numpy as np",
    "ns": "ort",
    "build": "ort.OrtValue.ortvalue_from_numpy(np.array(values, dtype={dtype}))",
    **_probekit.NUMPY_DTYPES_REPRO,
    # an OrtValue has no reshape: the NumPy array under it is reshaped and wrapped again
    **_probekit.repro_views(
        reshape="{x} = ort.OrtValue.ortvalue_from_numpy({x}.numpy().reshape({shape}))"),
    "consume": {"dlpack": "ort.OrtValue.from_dlpack({obj})",
                "dlpack_capsule": "ort.OrtValue.from_dlpack({obj})"},
    # x moved to 64-byte aligned memory, as build() makes it: some consumers copy otherwise
    "align": ("_n = x.numpy(); _b = np.zeros(_n.nbytes + 64, np.uint8); "
              "_a = _b[-_b.ctypes.data % 64:][:_n.nbytes].view(_n.dtype).reshape(_n.shape); "
              "_a[...] = _n; x = ort.OrtValue.ortvalue_from_numpy(_a)"),
    "tolist": "{y}.numpy().tolist()",
    "dtype": "{y}.data_type()",
    "shape": "tuple({y}.shape())",
    "pointer": "{y}.data_ptr()",
}


def load():
    global ort, np
    import numpy
    import onnxruntime

    ort, np = onnxruntime, numpy
    return _probekit.load_info(
        ort.__version__,
        missing={
            "complex64": "ONNX Runtime has no complex tensors",
            "complex128": "ONNX Runtime has no complex tensors",
            "bfloat16": "OrtValue.ortvalue_from_numpy refuses NumPy's bfloat16 (ml_dtypes)",
        },
        layouts=_probekit.DENSE_LAYOUTS,
        layout_note="an OrtValue is dense and row-major: this layout would be a copy",
        exports=_probekit.exports("dlpack", "array", dlpack_capsule="x.__dlpack__()"),
        # "No data is copied; the new OrtValue shares memory with the source" (from_dlpack's
        # docstring); it takes an object with __dlpack__ or a capsule
        imports=_probekit.imports({"dlpack": "OrtValue.from_dlpack(obj)",
                                   "dlpack_capsule": "OrtValue.from_dlpack(capsule)"},
                                  zero_copy=True, readonly=False),
    )


def build(data, dtype, ops, readonly=False):
    base = _probekit.numpy_from_bytes(np, data, dtype)
    for shape in _probekit.reshape_only(ops, "an OrtValue"):
        base = base.reshape(shape)
    # the OrtValue keeps `base` alive: it is backed by its buffer on the CPU
    return ort.OrtValue.ortvalue_from_numpy(base)


def describe(x):
    name = x.data_type()
    if name.startswith("tensor(") and name.endswith(")"):
        name = name[len("tensor("):-1]
    dtype = ORT_DTYPES.get(name, name)
    address = x.data_ptr() if x.tensor_size_in_bytes() else 0
    return _probekit.pointer_description(address, x.shape(), None, dtype, None)


def export(x, protocol):
    # the legacy capsule is what __dlpack__() without max_version gives
    return x.__dlpack__() if protocol == "dlpack_capsule" else x


def consume(obj, protocol, dtype):
    return ort.OrtValue.from_dlpack(obj)
