"""Helpers shared by the probes.

The driver loads this file first and registers it as the module `_probekit`, so every probe can
`import _probekit`. It must stay importable without any array library: each helper that needs
NumPy imports it when called.
"""

import builtins

# The dtype names of the interface, in the driver's order.
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

ITEMSIZE = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
}

# The layouts of the interface (see README.md for the ops of each).
LAYOUTS = (
    "contiguous",
    "flat",
    "fortran",
    "transposed",
    "strided",
    "reversed",
    "offset",
    "scalar",
    "empty",
    "unit_dims",
    "broadcast",
)

# Native PEP 3118 format characters. int64/uint64 use 'q'/'Q' because 'l' is 4 bytes on
# some platforms; bfloat16 and complex have no format that memoryview.cast accepts.
FORMATS = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint8": "B",
    "uint16": "H",
    "uint32": "I",
    "uint64": "Q",
    "float16": "e",
    "float32": "f",
    "float64": "d",
}

CPU = ["cpu", 0]


def _reshape(x, shape):
    return x.reshape(tuple(shape))


def _permute(x, perm):
    return x.transpose(tuple(perm))


def _slice(x, triples):
    return x[tuple(builtins.slice(*t) for t in triples)]


_DEFAULT_HOOKS = {"reshape": _reshape, "permute": _permute, "slice": _slice}


def apply_ops(x, ops, xp=None, **hooks):
    """Applies the layout ops of build() to `x` and returns the result.

    Defaults: x.reshape(shape), x.transpose(perm), x[slices] and xp.broadcast_to(x, shape)
    (`xp` is the library's namespace). A probe passes its own primitive for an op as a keyword
    named after the op: `reshape=`, `permute=`, `slice=`, `broadcast=`; each takes (x, arg).
    Passing None for an op says the library cannot express it as a view.
    """
    for name, arg in ops:
        if name not in ("reshape", "permute", "slice", "broadcast"):
            raise ValueError(f"unknown layout op {name!r}")
        if name in hooks:
            fn = hooks[name]
        elif name == "broadcast":
            fn = None if xp is None else lambda y, shape: xp.broadcast_to(y, tuple(shape))
        else:
            fn = _DEFAULT_HOOKS[name]
        if fn is None:
            raise NotImplementedError(f"this library cannot express the op {name!r} as a view")
        x = fn(x, arg)
    return x


def slice_text(triples):
    """The Python spelling of a slice op's (start, stop, step) triples, as in `x[1:5:2, :]`:
    what a reproducer writes for build()'s `slice` step."""
    parts = []
    for start, stop, step in triples:
        text = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
        parts.append(text if step in (None, 1) else f"{text}:{step}")
    return ", ".join(parts)


def dtype_name(dt):
    """The interface's name for a library dtype whose str() ends with a NumPy-style name.

    Covers "float32", "torch.float32", "paddle.bool", "mlx.core.bool", "bool_"; any other
    spelling comes back unchanged, which the README allows for dtypes the driver does not know.
    """
    name = str(dt).rsplit(".", 1)[-1]
    return "bool" if name == "bool_" else name


def c_strides(shape, itemsize):
    """Byte strides of a C-contiguous array of `shape`."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def pointer_description(data, shape, strides, dtype, readonly, device=None):
    """The describe() dict for an array the library can give a pointer for.

    `strides` are in bytes, or None for C-contiguous. `device` is ("cuda", ordinal) for device
    memory; the default is the CPU.
    """
    return {
        "data": int(data),
        "shape": [int(n) for n in shape],
        "strides": None if strides is None else [int(s) for s in strides],
        "dtype": dtype,
        "readonly": readonly,
        "device": list(device or CPU),
    }


def require_cuda(device):
    """Refuses a build() on anything but a CUDA device, for GPU-only libraries."""
    if device != "cuda":
        raise ValueError(f"this library builds arrays on CUDA devices only, not {device!r}")


def cuda_note(exc):
    """The notes["cuda"] text for a library whose CUDA device is not usable."""
    text = " ".join(str(exc).split())
    return f"no usable CUDA device: {type(exc).__name__}: {text}"[:300]


def buffer_description(obj, dtype, readonly=None):
    """The describe() dict for an array whose own memory is reachable only as a buffer.

    `obj` must offer the buffer protocol over the array's memory; the driver reads pointer,
    shape and strides from it, and takes the dtype from `dtype`.
    """
    return {"buffer": obj, "dtype": dtype, "readonly": readonly, "device": list(CPU)}


def numpy_like_description(x, readonly=None):
    """describe() of an object with NumPy's attribute API (ctypes.data, strides, flags)."""
    if readonly is None:
        readonly = not x.flags.writeable
    return pointer_description(
        x.ctypes.data, x.shape, x.strides, dtype_name(x.dtype), bool(readonly)
    )


def numpy_dtype(name):
    """The NumPy dtype for an interface dtype name; bfloat16 comes from ml_dtypes."""
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


# Where a probe allocates a producer's storage itself, the storage starts on this boundary.
# Allocators differ (malloc gives 16 bytes, NumPy's small arrays the same) and some consumers
# copy what is not aligned to 64 bytes (jax), so storage left where malloc happened to put it
# would make a case's outcome change from run to run. Misaligned starts are tested on purpose,
# and identically every run, by the `offset` layout.
ALIGNMENT = 64


def aligned_storage(data):
    """A writable ctypes char array holding a copy of `data` (at least one byte), starting on
    an ALIGNMENT boundary. It keeps the larger allocation it lives in alive."""
    import ctypes

    size = max(len(data), 1)
    block = (ctypes.c_char * (size + ALIGNMENT - 1))()
    skip = -ctypes.addressof(block) % ALIGNMENT
    storage = (ctypes.c_char * size).from_buffer(block, skip)
    ctypes.memmove(storage, data, len(data))
    return storage


def numpy_from_bytes(data, dtype):
    """A writable 1-D NumPy array holding a copy of `data`, its first byte on an ALIGNMENT
    boundary."""
    import numpy as np

    itemsize = ITEMSIZE[dtype]
    block = np.empty(len(data) + itemsize + ALIGNMENT, dtype=np.uint8)
    skip = -block.ctypes.data % ALIGNMENT
    block[skip:skip + len(data)] = np.frombuffer(data, dtype=np.uint8)
    # Viewed as the dtype while it holds at least one element (NumPy moves the data pointer of
    # a zero-size view to its base's start), then cut to the elements given.
    typed = block[skip:skip + len(data) + itemsize].view(numpy_dtype(dtype))
    return typed[: len(data) // itemsize]
