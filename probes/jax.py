"""JAX (CPU backend).

Cannot: express any strided layout. JAX arrays have no user-visible strides: transposes,
slices and broadcasts compute new row-major arrays, so only contiguous, flat, scalar and empty
are built, and `other_device`: load() asks for two host devices (jax_num_cpu_devices), and the
array is put on cpu:1, not the default cpu:0 (on a GPU, on the second GPU where there is one).
Arrays are immutable (always read-only). There is no to_dlpack function any more and no
__array_interface__ / __array_struct__ export. Every import except jax.dlpack.from_dlpack copies. With a GPU backend (jax[cuda13]) arrays
are also built on the GPU and export __cuda_array_interface__; JAX has no public stream, so its
stream-ordering cases are not run. With a GPU backend, CPU cases build and import on the CPU
explicitly (JAX's default device is then the GPU). The GPU side ran on an H100 (jax 0.11.2) on
2026-11-26; CI has no GPU.
"""

import os

import _probekit

NAME = "jax"

jax = None
jnp = None

# How a reproducer spells JAX (probes/README.md, "Reproducers"): x64 mode on, as in load().
# Only reshape exists as a view; arrays are immutable, so a read-only x needs no extra step.
REPRO = {
    # Reproducers are of CPU cases: the CPU is the default device, as it was in the case (with
    # a GPU backend it would be the GPU, and jnp.array would make the array there).
    "import": ('import jax\njax.config.update("jax_enable_x64", True)\n'
               'jax.config.update("jax_platforms", "cpu")\n'
               'if hasattr(jax.config, "jax_num_cpu_devices"):  # as load(): cpu:0 and cpu:1\n'
               '    jax.config.update("jax_num_cpu_devices", 2)\n'
               "import jax.dlpack\nimport jax.numpy as jnp"),
    "ns": "jnp",
    "build": "jnp.array(values, dtype={dtype})",
    **_probekit.repro_views(reshape=_probekit.OP_LINES["reshape"]),
    "other_device": "{x} = jax.device_put({x}, jax.devices()[1])",
    "make_readonly": "# JAX arrays are immutable: x is read-only as it is",
    "consume": {
        "dlpack": "jax.dlpack.from_dlpack({obj})",
        **dict.fromkeys(("cuda_array_interface", *_probekit.ASARRAY_PROTOCOLS),
                        "jnp.asarray({obj})"),
    },
    "pointer": "{y}.unsafe_buffer_pointer()",
    "device": 'jax.devices("cpu")[0]',
    "compute": _probekit.scalar_identity_repro,
}


def load():
    global jax, jnp
    # JAX takes 75 % of a GPU's memory when its backend starts; interopcheck runs one worker
    # per core, each with its own JAX, so the second would find the GPU full. A user's own
    # setting wins.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax as _jax

    # Without x64 mode JAX silently turns 64-bit dtypes into 32-bit ones; users who exchange
    # 64-bit data enable it.
    _jax.config.update("jax_enable_x64", True)
    _use_compilation_cache(_jax)
    import jax.dlpack  # noqa: F401
    import jax.numpy as _jnp

    jax, jnp = _jax, _jnp
    second_host = _two_host_devices(_jax)
    # Only a JAX with a GPU plugin starts its backends here (to ask for GPUs): a JAX without
    # one starts none, so no backend thread exists yet and a fork of this process can start
    # its own (see fork= below).
    plugins = _gpu_plugins()
    devices, gpu_notes = _probekit.cpu_and_cuda(
        bool(plugins and _gpus()),
        "no usable CUDA device: this jaxlib has no GPU backend or sees no GPU"
        if plugins else "no CUDA device: this JAX has no GPU plugin (jax[cuda13] installs one)")
    # every import but from_dlpack: jax.numpy.asarray, which copies
    copied = "jax.numpy.asarray(obj)"
    return _probekit.load_info(
        jax.__version__,
        devices=devices,
        layouts=_probekit.DENSE_LAYOUTS
        + (_probekit.OTHER_DEVICE_LAYOUTS if second_host else ()),
        layout_note="JAX has no strided views: this op makes a new row-major array",
        missing=gpu_notes,
        readonly=True,
        exports=_probekit.exports("dlpack")
        | _probekit.exports("buffer", "array", devices=["cpu"])
        # GPU arrays export version 2 of the interface, read-only, row-major only
        | _probekit.exports("cuda_array_interface", devices=["cuda"]),
        # The docstring promises shared memory unless a copy or device move is asked for.
        imports=_probekit.imports({"dlpack": "jax.dlpack.from_dlpack(obj)"}, zero_copy=True,
                                  readonly="always", devices=devices)
        | _probekit.imports({"cuda_array_interface": copied}, zero_copy=False,
                            readonly="always", devices=["cuda"])
        | _probekit.imports(dict.fromkeys(_probekit.ASARRAY_PROTOCOLS, copied),
                            zero_copy=False, readonly="always"),
        compute=_probekit.compute_info(_probekit.SCALAR_IDENTITY_CALL),
        float8=True,
        int4=True,
        other_device=second_host,
        from_dlpack_keywords=_probekit.keywords_taken(jax.dlpack.from_dlpack, ("copy", "device")),
        # jax.devices() starts the CPU client's threads (eight on a 2-core machine), which a
        # forked process lacks: there, describe() of a uint4 array waits for them forever (jax
        # 0.12.0.1). Without a GPU plugin load() starts no backend, and a fork starts its own.
        fork=not plugins,
        # jit compiles (or loads from the compilation cache, 2-6 ms) the import of a buffer and
        # y * 1 for each new shape and dtype, in each process that meets it
        compiles=True,
    )


def _two_host_devices(jax_module):
    """Two CPU devices, so that an array can live on one that is not the default (the
    other_device layout). Only before JAX starts its backend, and only where this JAX has the
    option: otherwise it keeps one, and the layout is left out. Whether it took."""
    try:
        jax_module.config.update("jax_num_cpu_devices", 2)
    except (AttributeError, RuntimeError, ValueError):
        return False
    return getattr(jax_module.config, "jax_num_cpu_devices", 1) == 2


def _gpu_plugins():
    """The GPU backends this JAX would load (jax[cuda12], jax[cuda13] install one), found
    without starting any: the modules of the jax_plugins namespace and the entry points of
    that group, as JAX itself looks for them."""
    import importlib.metadata
    import pkgutil

    found = [entry.name for entry in importlib.metadata.entry_points(group="jax_plugins")]
    try:
        import jax_plugins
    except ImportError:
        return found
    return found + [module.name for module in pkgutil.iter_modules(jax_plugins.__path__)]


def _second_device(device):
    """The device other_device puts the array on: the second of the case's kind."""
    found = _gpus() if device == "cuda" else jax.devices("cpu")
    if len(found) < 2:
        raise NotImplementedError(f"JAX has one {device} device here: no second one to use")
    return found[1]


def _use_compilation_cache(jax_module):
    """JAX's persistent compilation cache in the driver's cache directory: every new shape and
    dtype costs JAX a compile of its import and of compute() (~25 ms each on the CPU), which
    each worker, a worker started after a crash and every run would otherwise pay again. Every
    compile is kept, however quick. An option this JAX lacks is skipped (older releases)."""
    path = _probekit.cache_dir("jax")
    if path is None:
        return
    for option, value in (("jax_compilation_cache_dir", path),
                          ("jax_persistent_cache_min_compile_time_secs", 0),
                          ("jax_persistent_cache_min_entry_size_bytes", 0)):
        try:
            jax_module.config.update(option, value)
        except (AttributeError, KeyError, ValueError):
            pass


def _gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:  # no GPU backend in this jaxlib
        return []


def build(data, dtype, ops, readonly=False, device="cpu"):
    import numpy  # for the staging array (the library has imported NumPy already)

    # The shape is given on the host and the array put on its device in one transfer, committed
    # to it (with a GPU backend JAX's default device is the GPU). jnp.array() and reshape() are
    # operations JAX compiles for each new shape and dtype (5-12 ms each, from its cache), which
    # every worker paid for each of a few hundred shapes; a transfer compiles nothing.
    # Staged 16 bytes past the alignment JAX borrows host memory at (_put_owned).
    host = _probekit.numpy_from_bytes(numpy, data, dtype, past_alignment=16)
    target = _gpus()[0] if device == "cuda" else jax.devices("cpu")[0]
    for name, arg in ops:
        if name == "other_device":
            target = _second_device(device)
        else:
            (shape,) = _probekit.reshape_only([(name, arg)], "JAX")
            host = host.reshape(tuple(shape))
    x = _put_owned(host, target)
    x.block_until_ready()
    return x


def _put_owned(host, target):
    """A JAX array on `target` holding a copy of NumPy array `host` in a buffer JAX allocated.

    On the CPU, device_put() borrows a host array aligned to 64 bytes instead of copying it
    (may_alias=False notwithstanding), and JAX treats such an array differently: its
    __dlpack__(stream=1) exports where its own arrays raise. build() stages `host` off that
    alignment (16 bytes past it, aligned for every dtype); an array that still borrows it is
    made again by jnp.array(copy=True), which compiles but always copies."""
    x = jax.device_put(host, target)
    if target.platform == "cpu" and host.size and x.unsafe_buffer_pointer() == host.ctypes.data:
        with jax.default_device(target):
            x = jax.device_put(jnp.array(host, copy=True), target)
    return x


def _device_layout(x):
    """x's device layout (major_to_minor, tiling), whichever JAX this is: x.format.layout since
    JAX 0.6, x.layout.device_local_layout before (with the tiling as _tiling)."""
    if hasattr(x, "format"):
        layout = x.format.layout
        return tuple(layout.major_to_minor), tuple(layout.tiling or ())
    layout = x.layout.device_local_layout
    return tuple(layout.major_to_minor), tuple(getattr(layout, "_tiling", None) or ())


def describe(x):
    # An imported DLPack array can keep a non-row-major buffer (a transposed import), so the
    # strides come from the array's layout, not from its shape alone.
    if _probekit.dtype_name(x.dtype) in _probekit.INT4_DTYPES:
        # XLA packs 4-bit integers two to a byte: there are no byte-sized elements to point
        # at, so the contents go over as NumPy's (ml_dtypes') one a byte
        import numpy

        return _probekit.contents_description(numpy.asarray(x), _probekit.dtype_name(x.dtype))
    order, tiling = _device_layout(x)
    if tiling:
        raise NotImplementedError(f"tiled layout {tiling} has no strides")
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


def consume(obj, protocol, dtype, **keywords):
    if "device" in keywords:  # "cpu" or "cuda:N": JAX names its platforms cpu and gpu
        kind, _, ordinal = keywords["device"].partition(":")
        keywords["device"] = jax.devices("gpu" if kind == "cuda" else kind)[int(ordinal or 0)]
    if protocol == "dlpack":
        return jax.dlpack.from_dlpack(obj, **keywords)
    if protocol == "cuda_array_interface":
        return jnp.asarray(obj)
    # A host export is imported onto the CPU, where the case is, and committed there: with a
    # GPU backend asarray would copy it to the GPU, JAX's default device, and compute() would
    # move an uncommitted import there (a user's choice, not the exchange's).
    host = jax.devices("cpu")[0]
    with jax.default_device(host):
        return jax.device_put(jnp.asarray(obj), host)


def compute(y):
    # JAX dispatches asynchronously: the result is waited for here, so that a failure of the
    # computation shows in compute() and not later, in whatever touches the result next
    return _probekit.scalar_identity(y).block_until_ready()
