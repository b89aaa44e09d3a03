"""Helpers shared by the probes.

The driver loads this file first and registers it as the module `_probekit`, so every probe can
`import _probekit`. It imports no array library, ever: a helper that needs one (NumPy for
staging arrays, pyarrow for Arrow buffers) is handed the module by the probe that imported it.
"""

import builtins
import functools
import sys
import types


def sibling(probe_file, name):
    """The helper module `name` (a file `name`.py next to the probe file `probe_file`, usually
    the probe's __file__), imported once and shared by the probes of that directory. Probe
    directories stay off sys.path (README.md), so a probe's own helpers are found this way."""
    if name in sys.modules:
        return sys.modules[name]
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(probe_file)), name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


# The dtype names of the interface, in the driver's order, with their size in bytes. The kit
# owns this list and LAYOUTS: a probe names what it leaves out (dtypes_except, layouts_except),
# not what it keeps, so that no probe repeats them.
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
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int4": 1,
    "uint4": 1,
}

DTYPES = tuple(ITEMSIZE)

# The OCP 8-bit floats (DLPack's kDLFloat8_e4m3fn and kDLFloat8_e5m2; ml_dtypes for NumPy): only
# a library that has them builds them, and says so with load_info(float8=True); every other
# probe leaves them out with FLOAT8_NOTE.
FLOAT8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
FLOAT8_NOTE = "no 8-bit float types"

# The 4-bit integers, one a byte in its low half (ml_dtypes' int4 and uint4 for NumPy, torch's
# int4 and uint4): only a library that has them builds them, load_info(int4=True).
INT4_DTYPES = ("int4", "uint4")
INT4_NOTE = "no 4-bit integer types"

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
    "unit_dims_odd",
    "broadcast_inner",
    "ndim32",
    "neg_view",
    "conj_view",
    "requires_grad",
    "subclass",
    "other_device",
)

# The layouts a library without strided views can still build: the row-major ones (README.md:
# such a library leaves the others out rather than returning a copy).
DENSE_LAYOUTS = ("contiguous", "flat", "scalar", "empty", "ndim32")

# Layouts of lazy value views (memory holding the negated or conjugated elements, under a flag
# that says so): only a library with such views builds them, and says so with
# load_info(lazy_views=True); every other probe leaves them out with LAZY_VIEW_NOTE.
LAZY_VIEW_LAYOUTS = ("neg_view", "conj_view")
LAZY_VIEW_NOTE = "no lazy negation or conjugation views (torch's negative and conjugate bits)"

# Layouts of tensor variants (an array recording gradients, an instance of a subclass of the
# array type: torch's requires_grad and torch.nn.Parameter): only a library with them builds
# them, and says so with load_info(tensor_variants=True); every other probe leaves them out
# with TENSOR_VARIANT_NOTE.
TENSOR_VARIANT_LAYOUTS = ("requires_grad", "subclass")
TENSOR_VARIANT_NOTE = "no gradient-recording arrays or array subclasses (torch's requires_grad, nn.Parameter)"

# The layout of an array on a device other than the library's default one of the case's kind
# (JAX's cpu:1): only a library that has such a device builds it, and says so with
# load_info(other_device=True); every other probe leaves it out with OTHER_DEVICE_NOTE.
OTHER_DEVICE_LAYOUTS = ("other_device",)
OTHER_DEVICE_NOTE = "no second device of a kind to place an array on (JAX's cpu:1)"


def dtypes_except(*left_out):
    """DTYPES without `left_out`, in the driver's order: the dtypes a probe declares."""
    return [d for d in DTYPES if d not in left_out]


def layouts_except(*left_out):
    """LAYOUTS without `left_out`, in the driver's order: the layouts a probe declares."""
    return [layout for layout in LAYOUTS if layout not in left_out]


def missing_notes(names, supported, reason):
    """load()'s notes for every one of `names` (DTYPES or LAYOUTS) that `supported` leaves out,
    all with the same reason."""
    return {name: reason for name in names if name not in supported}


# --- load()'s dict (README.md, "load()") ------------------------------------------------------

# The version a probe of Python's builtin types reports: the Python that runs the worker.
PYTHON_VERSION = sys.version.split()[0]

# The export of each protocol that an array offers through the protocol's own method or
# attribute (or memoryview, for the buffer protocol): the "call" `interopcheck list` shows.
EXPORT_CALLS = {
    "dlpack": "x.__dlpack__",
    "array_interface": "x.__array_interface__",
    "array_struct": "x.__array_struct__",
    "buffer": "memoryview(x)",
    "array": "x.__array__",
    "cuda_array_interface": "x.__cuda_array_interface__",
    "arrow": "x.__arrow_c_array__",
    "arrow_device": "x.__arrow_c_device_array__",
    "arrow_stream": "x.__arrow_c_stream__",
}

# The protocols a NumPy-style asarray(obj) imports: the NumPy interfaces and the buffer protocol.
ASARRAY_PROTOCOLS = ("array_interface", "array_struct", "buffer", "array")


def exports(*protocols, devices=None, **calls):
    """load()'s export entries: each of `protocols` with its call from EXPORT_CALLS, and each
    keyword protocol=call with the library's own call (dlpack_capsule="torch.utils.dlpack.
    to_dlpack(x)"). `devices`, when given, limits all of them to those devices; merge entries
    with `|` where devices differ."""
    entries = {protocol: {"call": EXPORT_CALLS[protocol]} for protocol in protocols}
    entries.update({protocol: {"call": call} for protocol, call in calls.items()})
    if devices is not None:
        for entry in entries.values():
            entry["devices"] = list(devices)
    return entries


def dlpack_c_api(cls):
    """The flag of load()'s dlpack export entry (`"c_api"`) for a library whose array type
    `cls` publishes the DLPack C exchange API (__dlpack_c_exchange_api__), which interopcheck's
    consumer then also imports through (the c_api variant); {} for one that does not."""
    return {"c_api": True} if hasattr(cls, "__dlpack_c_exchange_api__") else {}


@functools.cache
def _capsule_api():
    """ctypes prototypes of the capsule API and Py_DecRef, made once: ctypes.pythonapi's own
    functions are shared by every library in the process, so their argtypes are not ours."""
    import ctypes

    api = ctypes.pythonapi
    return types.SimpleNamespace(
        get_name=ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", api)),
        get_pointer=ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", api)),
        set_name=ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_SetName", api)),
        dec_ref=ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("Py_DecRef", api)),
        to_py=ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)))


def c_api_import(cls, obj):
    """Imports `obj` through the DLPack C exchange API of `cls` (the consumer library's array
    type): a versioned capsule from obj.__dlpack__, taken (renamed used_*) and handed to the
    table's managed_tensor_to_py_object_no_sync, which owns the tensor from then on. A legacy
    capsule is refused with BufferError: the C API takes DLManagedTensorVersioned only."""
    import ctypes

    capi = _capsule_api()
    get_name, get_pointer, set_name = capi.get_name, capi.get_pointer, capi.set_name
    dec_ref, to_py = capi.dec_ref, capi.to_py

    table = cls.__dlpack_c_exchange_api__
    functions = ctypes.cast(get_pointer(table, b"dlpack_exchange_api"),
                            ctypes.POINTER(ctypes.c_void_p))
    # header (version: two uint32, prev_api: a pointer), allocator, from_py_object, to_py_object
    to_py_object = to_py(functions[4])
    try:
        capsule = obj.__dlpack__(max_version=(1, 3))
    except TypeError:  # a producer older than max_version: the spec's retry
        capsule = obj.__dlpack__()
    if get_name(capsule) != b"dltensor_versioned":
        raise BufferError("the DLPack C exchange API imports DLManagedTensorVersioned only; the "
                          "producer answered with a legacy capsule")
    managed = get_pointer(capsule, b"dltensor_versioned")
    set_name(capsule, b"used_dltensor_versioned")
    out = ctypes.c_void_p()
    rc = to_py_object(managed, ctypes.byref(out))  # a failure raises the exception it set
    if rc != 0 or not out.value:
        raise RuntimeError(f"managed_tensor_to_py_object_no_sync returned {rc} and no array, "
                           "with no exception set")
    array = ctypes.cast(out, ctypes.py_object).value
    dec_ref(out.value)  # the table's new reference; `array` holds its own
    return array


def imports(calls, *, zero_copy, readonly, typed=True, devices=None, claimed=True):
    """load()'s import entries: each protocol of `calls` ({protocol: call}) with the same flags
    (README.md, "load()"). `devices` defaults to the CPU there; merge entries with `|` where the
    flags differ. `claimed=False`: the library does not say it imports this way, and is fed the
    protocol to show what it does (TensorFlow's capsule-only from_dlpack given arrays)."""
    flags = {"zero_copy": zero_copy, "typed": typed, "readonly": readonly}
    if not claimed:
        flags["claimed"] = False
    if devices is not None:
        flags["devices"] = list(devices)
    return {protocol: {"call": call, **flags} for protocol, call in calls.items()}


def numpy_asarray_imports(from_dlpack, asarray):
    """load()'s imports of a namespace whose `asarray` is numpy.asarray or wraps it (NumPy,
    array-api-strict), with its `from_dlpack`. numpy.asarray documents that it copies only for
    __array__ results, nested sequences or a dtype/order change, so the interface and buffer
    imports share memory; all of them keep read-only data read-only."""
    shared = imports({"dlpack": from_dlpack, **dict.fromkeys(ASARRAY_PROTOCOLS, asarray)},
                     zero_copy=True, readonly=True)
    # __array__ results are what asarray copies
    return shared | imports({"array": asarray}, zero_copy=False, readonly=True)


def cpu_and_cuda(has_cuda, why_not):
    """load()'s devices and notes of a library that builds on the CPU, and on a CUDA device
    where it finds one: `has_cuda` says whether it does; `why_not` is notes["cuda"] otherwise."""
    return (["cpu", "cuda"], {}) if has_cuda else (["cpu"], {"cuda": why_not})


def cuda_only(find, why_not=None):
    """load()'s devices and notes of a library that builds on CUDA devices only. `find()` says
    whether a device is usable, best by allocating on it (what fails when the driver is missing
    or too old): true gives ["cuda"]; false gives no devices, and `why_not` (if any) as
    notes["cuda"]; an exception gives no devices, and notes["cuda"] says what it was."""
    try:
        if find():
            return ["cuda"], {}
    except Exception as exc:  # the reason is the point: each library raises its own CUDA error
        return [], {"cuda": cuda_note(exc)}
    return [], ({"cuda": why_not} if why_not else {})


def _in_driver_order(names, known, what):
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown {what}: {unknown}")
    return [name for name in known if name in names]


def cache_dir(name):
    """The directory where a probe keeps what its library compiled, `name` under the driver's
    INTEROPCHECK_CACHE_DIR (made if missing), or None when there is no cache: a worker started
    later, the other workers and the next run then load compiled code instead of compiling it
    again."""
    import os

    root = os.environ.get("INTEROPCHECK_CACHE_DIR")
    if not root:
        return None
    path = os.path.join(root, name)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path


def load_info(version, *, exports, imports, devices=("cpu",), missing=None, dtypes=None,
              layouts=None, dtype_note=None, layout_note=None, readonly=False, deviations=None,
              compute=None, from_dlpack_keywords=(), lazy_views=False, tensor_variants=False,
              float8=False, int4=False, nulls=False, other_device=False, fork=True,
              compiles=False):
    """load()'s dict (README.md, "load()").

    `missing` maps what the library lacks to why: dtypes, layouts and "cuda" (load()'s notes).
    The dtypes and layouts are all those it does not name, unless `dtypes` or `layouts` lists
    them (any collection of names); then `dtype_note` or `layout_note` is the reason of each one
    left out that `missing` does not name. Both lists come out in the driver's order.
    `compute` is the "compute" entry of a probe with compute() (compute_info()).
    `from_dlpack_keywords` names the keywords ("copy", "device") the library's DLPack import
    takes, as from_dlpack does (keywords_taken() reads them from the function, so that an older
    release is not called with keywords it predates): consume() is then also called with them; "c_api" says it also
    imports through its own DLPack C exchange API (consume(..., c_api=True): c_api_import). `lazy_views` says the
    library builds LAZY_VIEW_LAYOUTS; without it they are left out, with LAZY_VIEW_NOTE; so
    `tensor_variants` for TENSOR_VARIANT_LAYOUTS, `float8` for FLOAT8_DTYPES and `int4` for
    INT4_DTYPES. `nulls` says build() takes valid= (the Arrow nulls variants: README.md, "Nulls").
    `other_device` says it builds OTHER_DEVICE_LAYOUTS (an array on its second device).
    `fork=False` says its arrays cannot be worked with in a process forked from one that ran
    load() (README.md, "fork"): its crashing pairs' cases then run in a worker, not a copy.
    `compiles=True` says its imports or compute() compile code for each new shape and dtype,
    once in each process (README.md, "compiles"): its consumer cases are not run early.
    """
    missing = dict(missing or {})
    if not lazy_views:
        missing = dict.fromkeys(LAZY_VIEW_LAYOUTS, LAZY_VIEW_NOTE) | missing
    if not tensor_variants:
        missing = dict.fromkeys(TENSOR_VARIANT_LAYOUTS, TENSOR_VARIANT_NOTE) | missing
    if not other_device:
        missing = dict.fromkeys(OTHER_DEVICE_LAYOUTS, OTHER_DEVICE_NOTE) | missing
    for wanted, kinds, note in ((float8, FLOAT8_DTYPES, FLOAT8_NOTE), (int4, INT4_DTYPES, INT4_NOTE)):
        if wanted:
            continue
        missing = dict.fromkeys(kinds, note) | missing
        if dtypes is not None:
            dtypes = [d for d in dtypes if d not in kinds]
    notes = {}
    if dtypes is None:
        dtypes = [d for d in DTYPES if d not in missing]
    elif dtype_note:
        notes |= missing_notes(DTYPES, dtypes, dtype_note)
    if layouts is None:
        layouts = [layout for layout in LAYOUTS if layout not in missing]
    elif layout_note:
        notes |= missing_notes(LAYOUTS, layouts, layout_note)
    info = {
        "version": version,
        "devices": list(devices),
        "dtypes": _in_driver_order(dtypes, DTYPES, "dtypes"),
        "layouts": _in_driver_order(layouts, LAYOUTS, "layouts"),
        "notes": notes | missing,
        "readonly": readonly,
        "nulls": nulls,
        "fork": fork,
        "compiles": compiles,
    }
    if deviations:
        info["deviations"] = deviations
    if compute:
        info["compute"] = compute
    if from_dlpack_keywords:
        imports = imports | {"dlpack": imports["dlpack"] | {"keywords": list(from_dlpack_keywords)}}
    return info | {"exports": exports, "imports": imports}


def keywords_taken(fn, names):
    """The keywords of `names` that the function `fn` takes, in order: what a probe passes as
    load_info()'s from_dlpack_keywords, so that an older release whose from_dlpack predates
    copy= or device= is not called with them (and charged with the TypeError). Read from its
    signature; one that takes **kwargs, or has no signature to read (a builtin), and whose
    docstring does not show its parameters either, is taken to accept them all."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        head = (getattr(fn, "__doc__", None) or "").strip().split("\n", 1)[0]
        if "(" not in head:
            return tuple(names)
        return tuple(n for n in names if f"{n}=" in head)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return tuple(names)
    return tuple(n for n in names if n in params)


# --- compute(): the consumer's own operation on an import (README.md, "compute(y)") -----------


def compute_info(call, missing=None):
    """load()'s "compute" entry: the operation compute() runs, as `interopcheck` notes name it,
    and the dtypes the library has no such operation for, each with why (`missing`: those cases
    skip the compute check with that reason, and compute() is not called)."""
    _in_driver_order(missing or {}, DTYPES, "dtypes")
    return {"call": call, "missing": dict(missing or {})}


# The operation of scalar_identity(), as compute_info()'s call and as REPRO's `compute`.
SCALAR_IDENTITY_CALL = "y * 1 (y | False for bool, y * y.dtype.type(1) for int4 and uint4)"


# read() and write() of a library whose arrays take NumPy's indexing, spelled for a reproducer:
# one element at the multi-index {index} of {y}, read as a Python scalar or set to {value}
ITEM_REPRO = {"read": "{y}[{index}].item()", "write": "{y}[{index}] = {value}"}


def scalar_identity_repro(dtype):
    """REPRO's `compute` of a probe whose compute() is scalar_identity()."""
    if dtype in INT4_DTYPES:
        return "{y} * {y}.dtype.type(1)"
    return "{y} | False" if dtype == "bool" else "{y} * 1"


def scalar_identity(y, dtype=None):
    """compute()'s operation for a library whose arrays take Python scalars as weakly typed
    operands (the array's dtype wins, as in NumPy's NEP 50): y * 1, and y | False for bool
    (`dtype` is y's interface dtype name; by default read from y.dtype). Both run the library's
    elementwise kernels, make a new array of y's dtype, and give back exactly y's values for
    every value of the driver's pattern: floats there are finite and normal, never NaN, -0 or
    subnormal (which a kernel flushing to zero would change). A probe calls it from its own
    compute(), so that a crash in it shows a frame of the probe's file (which names the side).
    A Python int makes ml_dtypes' 4-bit integers int8, so they are multiplied by their own 1."""
    dtype = dtype or dtype_name(y.dtype)
    if dtype == "bool":
        return y | False
    if dtype in INT4_DTYPES:
        return y * y.dtype.type(1)
    return y * 1


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
    named after the op: `reshape=`, `permute=`, `slice=`, `broadcast=`, `unit_stride=`; each
    takes (x, arg). `unit_stride` ([dimension, stride in bytes]: a size-1 dimension restrided)
    has no default: only a library with byte strides can express it (numpy_unit_stride).
    Passing None for an op says the library cannot express it as a view.
    """
    for name, arg in ops:
        if name not in ("reshape", "permute", "slice", "broadcast", "unit_stride", "neg_view",
                        "conj_view", "requires_grad", "subclass", "other_device"):
            raise ValueError(f"unknown layout op {name!r}")
        if name in hooks:
            fn = hooks[name]
        elif name == "broadcast":
            fn = None if xp is None else lambda y, shape: xp.broadcast_to(y, tuple(shape))
        else:
            fn = _DEFAULT_HOOKS.get(name)
        if fn is None:
            raise NotImplementedError(f"this library cannot express the op {name!r} as a view")
        x = fn(x, arg)
    return x


def numpy_unit_stride(x, arg):
    """The unit_stride op for a NumPy array: the same elements, with the size-1 dimension
    arg[0] given the stride arg[1] in bytes (which no element is read through)."""
    import numpy

    dim, stride = arg
    strides = x.strides[:dim] + (stride,) + x.strides[dim + 1:]
    # as_strided goes through __array_interface__, which cannot spell every dtype (ml_dtypes'
    # float8_e5m2 comes out as "<f1"): the view is made of raw elements of the same size
    raw = x.view(numpy.dtype((numpy.void, x.itemsize)))
    return numpy.lib.stride_tricks.as_strided(raw, x.shape, strides,
                                              writeable=x.flags.writeable).view(x.dtype)


# A layout whose size-1 dimension has a byte stride that is no multiple of the itemsize, which
# a library whose strides count elements cannot build
UNIT_STRIDE_NOTE = "its strides count elements: a stride of 3 bytes cannot be expressed"


def slice_text(triples):
    """The Python spelling of a slice op's (start, stop, step) triples, as in `x[1:5:2, :]`:
    what a reproducer writes for build()'s `slice` step."""
    parts = []
    for start, stop, step in triples:
        text = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
        parts.append(text if step in (None, 1) else f"{text}:{step}")
    return ", ".join(parts)


def _tuple_text(values):
    """A shape or permutation as a Python tuple: (2, 3, 4), (4,) or ()."""
    return "(" + ", ".join(str(int(v)) for v in values) + ("," if len(values) == 1 else "") + ")"


def op_fields(name, arg):
    """The fields a reproducer's line for one layout op may use (README.md, "Reproducers"):
    {slices} for a slice; {shape} or {perm} as a tuple and {shape_list} or {perm_list} as a list
    for the others."""
    if name == "slice":
        return {"slices": slice_text(arg)}
    if name == "unit_stride":
        return {"dim": int(arg[0]), "stride": int(arg[1])}
    text = _tuple_text(arg)
    return {"shape": text, "perm": text, "shape_list": list(arg), "perm_list": list(arg)}


# NumPy's spelling of the layout ops in a reproducer, with the variable {x} and the namespace
# {ns}: the defaults of the REPRO op keys, which many libraries share.
OP_LINES = {
    "reshape": "{x} = {x}.reshape({shape})",
    "permute": "{x} = {x}.transpose({perm})",
    "slice": "{x} = {x}[{slices}]",
    "broadcast": "{x} = {ns}.broadcast_to({x}, {shape})",
    "unit_stride": ("{x} = {ns}.lib.stride_tricks.as_strided({x}, {x}.shape, "
                    "{x}.strides[:{dim}] + ({stride},) + {x}.strides[{dim} + 1:])"),
}


def op_line(name, arg, x="x", ns="np"):
    """A reproducer's line applying one layout op to the variable `x` in NumPy's spelling, for
    a probe whose REPRO `build` is a function and whose library spells the ops the same."""
    return OP_LINES[name].format(x=x, ns=ns, **op_fields(name, arg))


def repro_views(**lines):
    """REPRO's layout-op keys of a library that has views for some ops only: the line of each
    op given here (a template or a function, as in README.md), None (no such view) for the
    others."""
    return {name: lines.get(name) for name in OP_LINES}


def numpy_dtype_text(dtype):
    """How a reproducer names an interface dtype as NumPy's: np.float32, np.bool_, and
    ml_dtypes.bfloat16, ml_dtypes.float8_* and ml_dtypes.int4/uint4 (NumPy has none of its own)."""
    if dtype == "bfloat16" or dtype in FLOAT8_DTYPES or dtype in INT4_DTYPES:
        return f"ml_dtypes.{dtype}"
    return {"bool": "np.bool_"}.get(dtype, f"np.{dtype}")


# REPRO's `dtypes` and `extra_imports` of a library whose reproducers name dtypes as NumPy's
# (numpy_dtype_text): NumPy itself, and the libraries that build from NumPy arrays.
NUMPY_DTYPES_REPRO = {
    "dtypes": {dtype: numpy_dtype_text(dtype) for dtype in DTYPES},
    "extra_imports": {"ml_dtypes.": "import ml_dtypes"},
}


def format_dtype(fmt, itemsize):
    """The interface's name of a native struct format (PEP 3118, without a byte-order mark) from
    the kind of its character and `itemsize`: exporters spell one dtype differently ('l' or
    'q'), and the letters of the C types have platform sizes. None for any other format."""
    bits = str(8 * itemsize)
    if fmt == "?":
        return "bool"
    if len(fmt) == 1 and fmt in "bhilq":
        return "int" + bits
    if len(fmt) == 1 and fmt in "BHILQ":
        return "uint" + bits
    if len(fmt) == 1 and fmt in "efd":
        return "float" + bits
    if fmt in ("Zf", "Zd"):
        return "complex" + bits
    return None


# dtype_name's answers by the dtype object's id, each with the object, which it keeps alive so
# that its id names no other object while it is here: str() of a NumPy dtype runs Python code
# of NumPy's (2-4 us), and a case asks for the names of up to three arrays' dtypes. Not keyed
# by the dtype itself: array_api_strict's dtypes hash as NumPy's do, and a lookup that met a
# NumPy key called array_api_strict's __eq__, which warns (62 000 warnings on --all -j1).
_DTYPE_NAMES = {}
_DTYPE_NAMES_MAX = 4096  # dtype objects made anew for each array do not pile up


def dtype_name(dt):
    """The interface's name for a library dtype whose str() ends with a NumPy-style name.

    Covers "float32", "torch.float32", "paddle.bool", "mlx.core.bool", "bool_"; any other
    spelling comes back unchanged, which the README allows for dtypes the driver does not know.
    """
    known = _DTYPE_NAMES.get(id(dt))
    if known is not None and known[0] is dt:
        return known[1]
    name = str(dt).rsplit(".", 1)[-1]
    name = "bool" if name == "bool_" else name
    if len(_DTYPE_NAMES) >= _DTYPE_NAMES_MAX:
        _DTYPE_NAMES.clear()
    _DTYPE_NAMES[id(dt)] = (dt, name)
    return name


def c_strides(shape, itemsize):
    """Byte strides of a C-contiguous array of `shape`."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def broadcast_strides(shape, old_shape, old_strides):
    """The strides of a view of `old_shape` broadcast to `shape`: new leading dimensions, and
    dimensions of 1 that grow, get stride 0."""
    lead = len(shape) - len(old_shape)
    return [0] * lead + [
        0 if old == 1 and new != 1 else stride
        for new, old, stride in zip(shape[lead:], old_shape, old_strides)
    ]


class Strided:
    """A view as numbers alone: shape, strides and the offset of its first element (strides and
    offset in one unit, bytes or elements), with the layout ops as methods. For probes that lay
    views out themselves (pydlpack), and for reproducers, which work out what a layout makes of
    the base values. Pass `broadcast=Strided.broadcast` to apply_ops."""

    def __init__(self, shape, strides, offset=0):
        self.shape, self.strides, self.offset = tuple(shape), tuple(strides), offset

    def reshape(self, shape):
        # the layouts reshape C-contiguous views only, whose last stride is the unit
        unit = self.strides[-1] if self.strides else None
        if unit is None or list(self.strides) != c_strides(self.shape, unit):
            raise NotImplementedError("reshape of a non-contiguous view")
        return Strided(shape, c_strides(shape, unit), self.offset)

    def transpose(self, perm):
        return Strided([self.shape[p] for p in perm], [self.strides[p] for p in perm], self.offset)

    def __getitem__(self, slices):
        shape, strides, offset = list(self.shape), list(self.strides), self.offset
        for dim, s in enumerate(slices):
            start, stop, step = s.indices(shape[dim])
            shape[dim] = len(range(start, stop, step))
            offset += start * strides[dim]
            strides[dim] *= step
        return Strided(shape, strides, offset)

    def broadcast(self, shape):
        return Strided(shape, broadcast_strides(shape, self.shape, self.strides), self.offset)

    def value_view(self, arg):
        """neg_view and conj_view: the values are the array's, at the same places."""
        return self

    def unit_stride(self, arg):
        dim, stride = arg
        return Strided(self.shape, self.strides[:dim] + (stride,) + self.strides[dim + 1:],
                       self.offset)


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


def reshape_only(ops, library):
    """The shapes of build()'s ops, for a library without strided views whose only view op is
    reshape (README.md: it leaves the other layouts out); any other op raises."""
    for name, _ in ops:
        if name != "reshape":
            raise NotImplementedError(f"{library} cannot express {name!r} as a view")
    return [shape for _, shape in ops]


def capsule_or_self(x, protocol, to_dlpack):
    """export() of a library whose arrays offer their protocols themselves, and a legacy DLPack
    capsule through its `to_dlpack` function."""
    return to_dlpack(x) if protocol == "dlpack_capsule" else x


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


def numpy_dtype(np, name):
    """The NumPy dtype for an interface dtype name (`np` is NumPy, which the probe imported);
    bfloat16, the float8 kinds and the 4-bit integers come from ml_dtypes."""
    if name == "bfloat16" or name in FLOAT8_DTYPES or name in INT4_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
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


def numpy_from_bytes(np, data, dtype, past_alignment=0):
    """A writable 1-D NumPy array holding a copy of `data`, its first byte on an ALIGNMENT
    boundary, or `past_alignment` bytes past one (a multiple of the itemsize, under
    ALIGNMENT). `np` is NumPy, as the probe imported it."""
    itemsize = ITEMSIZE[dtype]
    block = np.empty(len(data) + itemsize + 2 * ALIGNMENT, dtype=np.uint8)
    skip = -block.ctypes.data % ALIGNMENT + past_alignment
    block[skip:skip + len(data)] = np.frombuffer(data, dtype=np.uint8)
    # Viewed as the dtype while it holds at least one element (NumPy moves the data pointer of
    # a zero-size view to its base's start), then cut to the elements given.
    typed = block[skip:skip + len(data) + itemsize].view(numpy_dtype(np, dtype))
    return typed[: len(data) // itemsize]


# --- Python's byte strings: the py_bytes and py_bytearray probes ------------------------------
# A byte string (`kind`: bytes or bytearray) is a 1-D buffer of unsigned bytes (format "B"):
# uint8 only, and no views (slicing copies, and there is no reshape), so of the layouts only
# `flat` and `empty` exist. Its import kind(obj) copies the raw bytes in C order (untyped).


def _byte_string_only(name, dtype, ops):
    if dtype != "uint8" or ops:
        raise NotImplementedError(f"{name} cannot express {dtype} {ops}")


def byte_string_info(kind, immutable):
    """load() of a byte string's probe; an `immutable` one is always read-only."""
    name = kind.__name__
    return load_info(
        PYTHON_VERSION,
        dtypes=["uint8"],
        dtype_note=f"{name} has the format 'B' only",
        layouts=["flat", "empty"],
        layout_note=f"{name} is a 1-D buffer of bytes; slicing copies and there is no reshape",
        readonly=immutable,
        exports=exports("buffer"),
        imports=imports({"buffer": f"{name}(obj)"}, zero_copy=False, typed=False,
                        readonly=immutable),
    )


def byte_string_build(kind, data, dtype, ops):
    """build() of a byte string's probe: a new `kind` object holding a copy of `data`."""
    _byte_string_only(kind.__name__, dtype, ops)
    # kind(memoryview) copies (bytes(data) would be `data` itself), so the object does not
    # alias the driver's data
    return kind(memoryview(data))


def byte_string_repro(kind, immutable):
    """REPRO of a byte string's probe (README.md, "Reproducers"): builtins only. The import is
    untyped (flat bytes), so interopcheck checks neither its dtype nor its shape: no `dtype`,
    and its bytes are read back as the export's elements. No pointer API, as in describe()."""
    name = kind.__name__

    def build(dtype, ops, readonly):
        # build() copies the driver's bytes into a new object; the values are uint8, so
        # kind(values) is the same object. An immutable one is read-only as it is.
        _byte_string_only(name, dtype, ops)
        if readonly and not immutable:
            raise NotImplementedError(f"a {name} cannot be made read-only")
        return [f"x = {name}(values)"]

    return {
        "import": "",
        "build": build,
        "consume": {"buffer": name + "({obj})"},
        "elements": "export",
        "shape": "(len({y}),)",
        "readonly": "memoryview({y}).readonly",
    }


# --- Apache Arrow: the pyarrow and pyarrow_tensor probes --------------------------------------

# What Arrow's type system lacks, as load()'s notes.
ARROW_MISSING = {
    "bfloat16": "Arrow has no bfloat16 type",
    "complex64": "Arrow has no complex type",
    "complex128": "Arrow has no complex type",
}

# The layouts of a 1-D Arrow column (pyarrow.Array, a nanoarrow CArray, a polars Series): a
# unit-step slice is a view with an offset; nothing else is.
ARROW_COLUMN_LAYOUTS = ("flat", "offset", "empty")


def column_slice(x, ops, length, what, view=None):
    """build()'s layout ops for a 1-D column whose only view is a unit-step slice: `x` sliced
    by `x.slice(start, length)` for each op, or by `view(x, start, length)` where the library
    spells it otherwise (`length` is len of a column); any other op raises
    NotImplementedError naming `what`."""
    for name, arg in ops:
        if name != "slice" or len(arg) != 1:
            raise NotImplementedError(f"{what} cannot express {name} {arg} as a view")
        start, stop, step = builtins.slice(*arg[0]).indices(length(x))
        if step != 1:
            raise NotImplementedError(f"{what} cannot slice with step {step} as a view")
        n = max(stop - start, 0)
        x = view(x, start, n) if view else x.slice(start, n)
    return x


def column_slice_repro(what, spelling="x = x.slice({start}, {length})"):
    """REPRO's `slice` line of a column whose one view is a unit-step slice, spelled
    x.slice(offset, length) unless `spelling` says otherwise ({start}, {stop}, {length})."""
    def line(triples):
        ((start, stop, step),) = triples
        if step not in (None, 1) or start is None or stop is None or not 0 <= start <= stop:
            raise NotImplementedError(f"{what} cannot express slice {triples} as a view")
        return spelling.format(start=start, stop=stop, length=stop - start)
    return line


def pack_bools(data):
    """Byte booleans (build()'s bytes of a bool array, or its valid=) as Arrow's bit-packed
    values buffer (or validity bitmap): element i in bit i % 8 of byte i // 8, a new
    bytearray."""
    packed = bytearray((len(data) + 7) // 8)
    for i, byte in enumerate(data):
        if byte:
            packed[i // 8] |= 1 << (i % 8)
    return packed


def arrow_validity(array):
    """describe()'s "validity" of a pyarrow.Array: its bitmap's address and the array's offset
    (which the bitmap shares), or None where it has no bitmap, so no nulls."""
    bitmap = array.buffers()[0]
    return None if bitmap is None else (bitmap.address, array.offset)


def pyarrow_description(pa, x):
    """describe() of a pyarrow Array or ChunkedArray (`pa` is pyarrow, as the probe imported
    it): the values buffer at the array's offset, and its validity; booleans (bit-packed) and
    several chunks joined go over as their elements' bytes."""
    dtype = arrow_dtype_name(x.type)
    if isinstance(x, pa.ChunkedArray):
        if x.num_chunks != 1:
            # a stream's import of several arrays (or none): their elements, joined, as bytes
            return contents_description(x.to_numpy(), dtype)
        x = x.chunk(0)
    if dtype == "bool":
        # bit-packed: no byte per element to point at; the elements go over as bytes, which
        # Arrow's cast to uint8 makes (0 or 1; what lies under a null is not compared).
        # fill_null(False).to_numpy() said the same, but its first call in a process imports
        # pandas (0.25 s, in the middle of a worker's cases).
        values = x.cast(pa.uint8())
        data = values.buffers()[1]
        raw = b"" if data is None else data.to_pybytes()[values.offset:values.offset + len(x)]
        return bytes_description(raw, [len(x)], dtype) | {"validity": arrow_validity(x)}
    data = x.buffers()[1]
    address = 0 if data is None else data.address + x.offset * x.type.byte_width
    return pointer_description(address, [len(x)], None, dtype, True) | {
        "validity": arrow_validity(x)}


def contents_description(values, dtype):
    """describe() of an array with nothing to point at, from the NumPy array of its elements that
    the library's own API made: their bytes in C order, and its shape."""
    return bytes_description(values.tobytes(), list(values.shape), dtype)


def bytes_description(raw, shape, dtype):
    """describe() of an array with nothing to point at, from its elements' bytes in C order."""
    return {"bytes": raw, "shape": shape, "dtype": dtype, "readonly": True, "device": list(CPU)}


def arrow_column_info(version, *, column, missing=None, **rest):
    """load()'s dict of a library whose arrays are 1-D Arrow columns (`column` names them in
    the notes): Arrow's dtypes (its booleans bit-packed, which the driver unpacks to compare),
    the column layouts, immutable. The rest is load_info()'s."""
    return load_info(
        version,
        layouts=ARROW_COLUMN_LAYOUTS,
        layout_note=f"{column} is 1-D, and only a unit-step slice is a view",
        missing={**ARROW_MISSING, **(missing or {})},
        readonly=True,
        **rest,
    )


# Arrow's names of its types (str(type)) where they differ from the interface's, and the same
# lookup as a reproducer's REPRO `dtype` of `{y}.type`.
_ARROW_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}
ARROW_DTYPE_REPRO = ('{{"halffloat": "float16", "float": "float32", "double": "float64"}}'
                     ".get(str({y}.type), str({y}.type))")


# The C data interface's format strings of the interface's dtypes that Arrow has a primitive of
# a byte or more for (a CArray or a raw ArrowSchema names its type this way).
ARROW_FORMAT_DTYPES = {"b": "bool", "c": "int8", "s": "int16", "i": "int32", "l": "int64", "C": "uint8",
                       "S": "uint16", "I": "uint32", "L": "uint64", "e": "float16", "f": "float32",
                       "g": "float64"}


def _repro_literal(mapping):
    """A dict literal for a REPRO template (its braces doubled for str.format)."""
    return "{{" + ", ".join(f"{k!r}: {v!r}" for k, v in mapping.items()) + "}}"


# REPRO's `dtype` and the itemsize of an array that only says its format ({y}.schema.format)
ARROW_FORMAT_DTYPE_REPRO = _repro_literal(ARROW_FORMAT_DTYPES) + "[{y}.schema.format]"
ARROW_FORMAT_ITEMSIZE_REPRO = (_repro_literal({f: ITEMSIZE[d] for f, d in
                                               ARROW_FORMAT_DTYPES.items()})
                               + "[{y}.schema.format]")


def arrow_dtype_name(arrow_type):
    """The interface's name of an Arrow type."""
    return _ARROW_NAMES.get(str(arrow_type), str(arrow_type))


def pyarrow_array(pa, data, dtype, valid=None):
    """A pyarrow Array of build()'s bytes (its own copy; booleans bit-packed), with valid='s
    nulls as its validity bitmap (the values under a null stay the pattern's, which Arrow
    leaves undefined); `pa` is pyarrow, as the probe imported it."""
    n = len(data) // ITEMSIZE[dtype]
    bitmap = None if valid is None else pa.py_buffer(pack_bools(valid))
    if dtype == "bool":
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, pa.py_buffer(pack_bools(data))])
    return pa.Array.from_buffers(getattr(pa, dtype)(), n, [bitmap, arrow_copy(pa, data)])


def arrow_copy(pa, data):
    """An Arrow-owned buffer (pyarrow.allocate_buffer: 64-byte aligned) holding a copy of
    `data`; `pa` is pyarrow, as the probe imported it."""
    buf = pa.allocate_buffer(len(data))
    memoryview(buf).cast("B")[:] = data
    return buf
