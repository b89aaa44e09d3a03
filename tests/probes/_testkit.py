"""Helpers shared by the test probes of tests/probes/, the libraries interopcheck's own tests run.

Most of them are NumPy underneath: their load() imports NumPy and declares a CPU library, their
build() lays out a NumPy array, their describe() reads NumPy's attributes. What each one breaks
stays in its own file; this kit holds only what they do alike, and the ctypes layouts of the
structs that some of them build by hand (DLPack's, NumPy's PyArrayInterface).

The catalog skips files whose name starts with "_", and the probe directories are not on
sys.path: a test probe imports this file with _probekit.sibling(__file__, "_testkit").
It must stay importable without NumPy (tests/integration/test_reports.py imports hostile_text
for its strings alone), so NumPy is imported by load_numpy(), when a probe's load() runs.
"""

import ctypes
import os

import _probekit

np = None  # NumPy, once load_numpy() imported it

# NumPy as the consumer of a test library's exports, as load()'s "imports" declares it
NUMPY_DLPACK = {"call": "numpy.from_dlpack(obj)", "zero_copy": True, "typed": True,
                "readonly": True}
NUMPY_ARRAY_INTERFACE = {"call": "numpy.asarray(obj)", "zero_copy": True, "typed": True,
                         "readonly": True}


def log_event(variable, what):
    """Appends "<what> <pid>" to the file the environment variable `variable` names, when it is
    set: how a test sees which process did what (test_supervisor.py reads it back)."""
    path = os.environ.get(variable)
    if path:
        with open(path, "a") as f:
            f.write(f"{what} {os.getpid()}\n")


def load_numpy(*, dtypes, layouts, exports, imports, version="0.0.1", notes=None,
               readonly=False):
    """Imports NumPy (the library underneath: its failure is the test library's import error)
    and returns load()'s dict for a CPU library with these dtypes, layouts and protocols."""
    global np
    import numpy

    np = numpy
    return {
        "version": version,
        "devices": ["cpu"],
        "dtypes": dtypes,
        "layouts": layouts,
        "notes": notes or {},
        "readonly": readonly,
        "exports": exports,
        "imports": imports,
    }


def load_numpy_dlpack(call, *, import_call=None, **info):
    """load_numpy()'s dict for a library that exports over DLPack only, by `call`, and imports as
    NumPy does (its import described as `import_call` when given); `info` is the rest of it."""
    imports = NUMPY_DLPACK if import_call is None else dict(NUMPY_DLPACK, call=import_call)
    return load_numpy(exports={"dlpack": {"call": call}}, imports={"dlpack": imports}, **info)


def numpy_array(data, dtype, ops):
    """`data` as a NumPy array of `dtype`, laid out by build()'s layout ops."""
    return _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops)


def self_repro(name, *imports):
    """REPRO's import and build of a test library whose reproducers make arrays through the
    library's own file: the script puts its directory and probes/ (for _probekit) on sys.path
    from TESTLIB_DIR and TESTLIB_KIT, which the tests set, loads it, and builds with build()
    from the case's values, as the case did. `imports` are further import lines."""
    return {
        "import": "\n".join(["import os", "import sys",
                              "sys.path += [os.environ['TESTLIB_DIR'], os.environ['TESTLIB_KIT']]",
                              f"import {name}", f"{name}.load()", "import numpy as np",
                              *imports]),
        "ns": "np",
        "build": lambda dtype, ops, readonly: [
            f"x = {name}.build(np.array(values, dtype={_probekit.numpy_dtype_text(dtype)})"
            f".tobytes(), {dtype!r}, {ops!r})"],
        "extra_imports": {"ml_dtypes.": "import ml_dtypes"},
    }


def load_pyarrow_plan(library, exports, imports, nulls=False):
    """Imports pyarrow (the library underneath) and returns it with load()'s dict of a test
    library over it: the six dtypes and the flat layout of the Arrow tests' plan, read-only,
    with `exports` and `imports`; `nulls`: build() takes valid=."""
    import pyarrow

    return pyarrow, _probekit.load_info(
        pyarrow.__version__,
        dtypes=["float64", "float32", "int32", "int16", "uint8", "uint16"],
        dtype_note=f"{library} has only the dtypes of its test plan",
        layouts=["flat"],
        layout_note=f"{library} has only the layout of its test plan",
        readonly=True,
        exports=exports,
        imports=imports,
        nulls=nulls,
    )


def pyarrow_flat(pa, data, dtype, ops, library, valid=None):
    """build() of a test library over pyarrow: a flat pyarrow array of its own copy of the
    bytes, with valid='s nulls (`library` names it in the refusal of any other layout)."""
    if ops:
        raise NotImplementedError(f"{library} builds flat arrays only")
    return _probekit.pyarrow_array(pa, data, dtype, valid)


class Array:
    """An array of a test library: a NumPy array underneath (`array`), which a probe's subclass
    exports over its protocols, breaking them as the probe says."""

    def __init__(self, array):
        self.array = array


class CpuArray(Array):
    """An Array that exports over DLPack, from the CPU."""

    def __dlpack_device__(self):
        return (1, 0)


class RefusingArray(CpuArray):
    """A CpuArray whose __dlpack__ refuses the dtypes of REFUSALS, {dtype name: (exception
    class, message)}, raising that exception, and exports the others as NumPy does."""

    REFUSALS = {}

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        refusal = self.REFUSALS.get(self.array.dtype.name)
        if refusal is not None:
            exc_type, message = refusal
            raise exc_type(message)
        return self.array.__dlpack__(stream=stream, max_version=max_version)


class CapsuleHolder:
    """Hands NumPy's from_dlpack a capsule the test library holds, as a CPU export."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def build(data, dtype, ops, readonly=False):
    """build() of a library whose arrays are NumPy's own."""
    return numpy_array(data, dtype, ops)


def describe(x):
    """describe() of a NumPy array, or of the one inside an Array."""
    return _probekit.numpy_like_description(x.array if isinstance(x, Array) else x)


def consume(obj, protocol, dtype):
    """consume() of a library that imports over DLPack as NumPy does."""
    return np.from_dlpack(obj)


# --- Structs built by hand ----------------------------------------------------------------

# DLDevice, DLDataType and DLTensor: the layouts a reproducer declares, from the one text of them
# (the reproducer writer sits beside the probe kit)
exec(_probekit.sibling(_probekit.__file__, "_repro").DLTENSOR_STRUCTS, globals())


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


class DLManagedTensor(ctypes.Structure):
    """The legacy struct: what to_dlpack functions of older libraries hand out."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ArrowSchema."""
    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("metadata", ctypes.c_void_p), ("flags", ctypes.c_int64),
                ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class ArrowArray(ctypes.Structure):
    """The Arrow C data interface's ArrowArray."""
    _fields_ = [("length", ctypes.c_int64), ("null_count", ctypes.c_int64),
                ("offset", ctypes.c_int64), ("n_buffers", ctypes.c_int64),
                ("n_children", ctypes.c_int64), ("buffers", ctypes.POINTER(ctypes.c_void_p)),
                ("children", ctypes.c_void_p), ("dictionary", ctypes.c_void_p),
                ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


class PyArrayInterface(ctypes.Structure):
    """NumPy's PyArrayInterface, the struct an __array_struct__ capsule points at."""
    _fields_ = [("two", ctypes.c_int), ("nd", ctypes.c_int), ("typekind", ctypes.c_char),
                ("itemsize", ctypes.c_int), ("flags", ctypes.c_int),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("data", ctypes.c_void_p), ("descr", ctypes.c_void_p)]


# Private prototypes of the capsule API: ctypes.pythonapi's functions are shared by every library
# in the process, so their argtypes are not ours to set. PYFUNCTYPE: called with the GIL held.
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
capsule_rename = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))
