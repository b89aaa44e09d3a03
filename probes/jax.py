"""JAX (CPU backend).

Cannot: express any strided layout. JAX arrays have no user-visible strides: transposes,
slices and broadcasts compute new row-major arrays, so only contiguous, flat, scalar and empty
are built. Arrays are immutable (always read-only). There is no to_dlpack function any more and no
__array_interface__ / __array_struct__ export. Every import except jax.dlpack.from_dlpack copies. With a GPU backend (jax[cuda13]) arrays
are also built on the GPU and export __cuda_array_interface__; JAX has no public stream, so its
stream-ordering cases are not run. The GPU side has not run in this project's CI (no GPU).
"""

import _probekit

NAME = "jax"

jax = None
jnp = None

# How a reproducer spells JAX (probes/README.md, "Reproducers"): x64 mode on, as in load().
# Only reshape exists as a view; arrays are immutable, so a read-only x needs no extra step.
REPRO = {
    "import": ('import jax\njax.config.update("jax_enable_x64", True)\nimport jax.dlpack\n'
               "import jax.numpy as jnp"),
    "ns": "jnp",
    "build": "jnp.array(values, dtype={dtype})",
    "permute": None,
    "slice": None,
    "broadcast": None,
    "make_readonly": "# JAX arrays are immutable: x is read-only as it is",
    "consume": {
        "dlpack": "jax.dlpack.from_dlpack({obj})",
        "cuda_array_interface": "jnp.asarray({obj})",
        "array_interface": "jnp.asarray({obj})",
        "array_struct": "jnp.asarray({obj})",
        "buffer": "jnp.asarray({obj})",
        "array": "jnp.asarray({obj})",
    },
    "pointer": "{y}.unsafe_buffer_pointer()",
}


def load():
    global jax, jnp
    import jax as _jax

    # Without x64 mode JAX silently turns 64-bit dtypes into 32-bit ones; users who exchange
    # 64-bit data enable it.
    _jax.config.update("jax_enable_x64", True)
    import jax.dlpack  # noqa: F401
    import jax.numpy as _jnp

    jax, jnp = _jax, _jnp
    no_views = "JAX has no strided views: this op makes a new row-major array"
    devices, gpu_notes = ["cpu"], {}
    if _gpus():
        devices.append("cuda")
    else:
        gpu_notes["cuda"] = "no usable CUDA device: this jaxlib has no GPU backend or sees no GPU"
    # every import but from_dlpack: jax.numpy.asarray, which copies
    copied = {"call": "jax.numpy.asarray(obj)", "zero_copy": False, "typed": True,
              "readonly": "always"}
    return {
        "version": jax.__version__,
        "devices": devices,
        "dtypes": list(_probekit.DTYPES),
        "layouts": list(_probekit.DENSE_LAYOUTS),
        "notes": _probekit.missing_notes(_probekit.LAYOUTS, _probekit.DENSE_LAYOUTS, no_views)
        | gpu_notes,
        "readonly": True,
        "exports": {
            "dlpack": {"call": "x.__dlpack__"},
            "buffer": {"call": "memoryview(x)", "devices": ["cpu"]},
            "array": {"call": "x.__array__", "devices": ["cpu"]},
            # GPU arrays export version 2 of the interface, read-only, row-major only
            "cuda_array_interface": {"call": "x.__cuda_array_interface__", "devices": ["cuda"]},
        },
        "imports": {
            # The docstring promises shared memory unless a copy or device move is asked for.
            "dlpack": {
                "call": "jax.dlpack.from_dlpack(obj)",
                "zero_copy": True,
                "typed": True,
                "readonly": "always",
                "devices": devices,
            },
            "cuda_array_interface": dict(copied, devices=["cuda"]),
            "array_interface": dict(copied),
            "array_struct": dict(copied),
            "buffer": dict(copied),
            "array": dict(copied),
        },
    }


def _gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:  # no GPU backend in this jaxlib
        return []


def build(data, dtype, ops, readonly=False, device="cpu"):
    # copy=True: the array must own a JAX buffer, not borrow the NumPy staging array
    x = jnp.array(_probekit.numpy_from_bytes(data, dtype), copy=True)
    if device == "cuda":
        x = jax.device_put(x, _gpus()[0])
    for name, arg in ops:
        if name != "reshape":
            raise NotImplementedError(f"JAX cannot express {name!r} as a view")
        x = x.reshape(tuple(arg))
    x.block_until_ready()
    return x


def describe(x):
    # An imported DLPack array can keep a non-row-major buffer (a transposed import), so the
    # strides come from the array's layout, not from its shape alone.
    layout = x.format.layout
    order = tuple(layout.major_to_minor)
    if layout.tiling:
        raise NotImplementedError(f"tiled layout {layout} has no strides")
    strides = [0] * x.ndim
    step = x.dtype.itemsize
    for dim in reversed(order):
        strides[dim] = step
        step *= max(x.shape[dim], 1)
    (where,) = x.devices()
    return _probekit.pointer_description(
        x.unsafe_buffer_pointer(), x.shape, strides, _probekit.dtype_name(x.dtype), True,
        device=("cuda", where.id) if where.platform == "gpu" else None,
    )


def consume(obj, protocol, dtype):
    if protocol == "dlpack":
        return jax.dlpack.from_dlpack(obj)
    return jnp.asarray(obj)
