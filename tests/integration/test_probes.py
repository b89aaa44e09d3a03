#!/usr/bin/env python3
"""Integration test of the Python probes, without the C driver.

Usage: .venv/bin/python tests/integration/test_probes.py [probe names...]

Loads every probe (or the named ones) the way the driver does: probes/_probekit.py registered as
the module `_probekit`, then the probe file imported under the name interopcheck_probe_<name>.
Each probe runs in its own worker process (a library that crashes, or the paddle-after-tensorflow
import hazard, costs that probe only). For every declared dtype x layout it builds an array from
a seeded byte pattern and checks describe() against an expected result computed here, in plain
Python, from nested lists: the shape, the bytes of every element read through describe()'s
pointer and strides, that the elements sit where a view of one base allocation puts them (no
copy faking a layout), and read-only-ness. It also checks load(), each declared export and each
declared import (with a NumPy source offered through one protocol only).

Output is TAP; the exit status is 1 when any test failed.
"""

import ctypes
import importlib.util
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE_DIR = ROOT / "probes"
WORKER_TIMEOUT = 60  # seconds for one probe's worker (a normal run takes a few)

# name -> (itemsize, value class)
DTYPES = {
    "bool": (1, "bool"),
    "int8": (1, "int"),
    "int16": (2, "int"),
    "int32": (4, "int"),
    "int64": (8, "int"),
    "uint8": (1, "uint"),
    "uint16": (2, "uint"),
    "uint32": (4, "uint"),
    "uint64": (8, "uint"),
    "float16": (2, "float"),
    "bfloat16": (2, "bfloat"),
    "float32": (4, "float"),
    "float64": (8, "float"),
    "complex64": (8, "complex"),
    "complex128": (16, "complex"),
    "float8_e4m3fn": (1, "float8_e4m3fn"),
    "float8_e5m2": (1, "float8_e5m2"),
    "int4": (1, "nibble"),
    "uint4": (1, "nibble"),
}

# name -> (base length, ops), as in probes/README.md
LAYOUTS = {
    "contiguous": (24, [("reshape", [2, 3, 4])]),
    "flat": (24, []),
    "fortran": (24, [("reshape", [4, 3, 2]), ("permute", [2, 1, 0])]),
    "transposed": (24, [("reshape", [2, 3, 4]), ("permute", [1, 0, 2])]),
    "strided": (31, [("slice", [[1, None, 3]])]),
    "reversed": (12, [("slice", [[None, None, -1]])]),
    "offset": (16, [("slice", [[5, 13, None]])]),
    "scalar": (1, [("reshape", [])]),
    "empty": (0, []),
    "unit_dims": (12, [("reshape", [2, 6, 1]), ("permute", [0, 2, 1])]),
    "broadcast": (4, [("reshape", [1, 4]), ("broadcast", [3, 4])]),
    "unit_dims_odd": (12, [("reshape", [2, 1, 6]), ("unit_stride", [1, 3])]),
    "broadcast_inner": (3, [("reshape", [3, 1]), ("broadcast", [3, 4])]),
    "ndim32": (24, [("reshape", [2, 3, 4] + [1] * 29)]),
    "neg_view": (24, [("reshape", [2, 3, 4]), ("neg_view", [])]),
    "conj_view": (24, [("reshape", [2, 3, 4]), ("conj_view", [])]),
    "requires_grad": (24, [("reshape", [2, 3, 4]), ("requires_grad", [])]),
    "subclass": (24, [("reshape", [2, 3, 4]), ("subclass", [])]),
    "other_device": (24, [("reshape", [2, 3, 4]), ("other_device", [])]),
}

def registry_protocols():
    """The protocol ids of the registry, IC_PROTOCOL_LIST in src/core/ic_protocol.h (their one
    home)."""
    text = (ROOT / "src" / "core" / "ic_protocol.h").read_text()
    listing = re.search(r"#define IC_PROTOCOL_LIST\(X\)(.*?)\n\n", text, re.S).group(1)
    return tuple(re.findall(r'X\(\w+, "(\w+)"', listing))


PROTOCOLS = registry_protocols()


# ---------------------------------------------------------------------------------------------
# Seeded element patterns: every value valid for its dtype, all values distinct where the dtype
# allows it, never a palindrome.


def _float_bits(rng, mant_bits, exp_bias, total_bits):
    """A normal float of moderate magnitude, as raw bits."""
    sign = rng.randint(0, 1)
    exponent = exp_bias + rng.randint(-6, 6)
    mantissa = rng.getrandbits(mant_bits)
    return (sign << (total_bits - 1)) | (exponent << mant_bits) | mantissa


_FLOAT_LAYOUT = {2: (10, 15, 16, "H"), 4: (23, 127, 32, "I"), 8: (52, 1023, 64, "Q")}
_FLOAT8_LAYOUT = {"float8_e4m3fn": (3, 7), "float8_e5m2": (2, 15)}


def _element(rng, dtype):
    size, cls = DTYPES[dtype]
    if cls == "bool":
        return bytes([rng.randint(0, 1)])
    if cls in ("int", "uint"):
        fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[size]
        if cls == "uint":
            return struct.pack("=" + fmt.upper(), rng.getrandbits(8 * size))
        return struct.pack("=" + fmt, rng.getrandbits(8 * size) - (1 << (8 * size - 1)))
    if cls == "bfloat":
        return struct.pack("=H", _float_bits(rng, 7, 127, 16))
    if cls in _FLOAT8_LAYOUT:  # exponents within 6 of the bias: never NaN or infinite
        mant, bias = _FLOAT8_LAYOUT[cls]
        return struct.pack("=B", _float_bits(rng, mant, bias, 8))
    if cls == "float":
        mant, bias, bits, fmt = _FLOAT_LAYOUT[size]
        return struct.pack("=" + fmt, _float_bits(rng, mant, bias, bits))
    mant, bias, bits, fmt = _FLOAT_LAYOUT[size // 2]
    return b"".join(struct.pack("=" + fmt, _float_bits(rng, mant, bias, bits)) for _ in "ri")


def pattern(dtype, n, seed):
    """n elements of dtype as bytes, seeded."""
    rng = random.Random(seed)
    if DTYPES[dtype][1] == "bool":
        bits = [rng.randint(0, 1) for _ in range(n)]
        if n >= 2:
            bits[0], bits[-1] = 1, 0
        return bytes(bits)
    if DTYPES[dtype][1] == "nibble":  # 16 values: an odd step, so that neighbours differ
        start, step = rng.randrange(16), rng.randrange(1, 16, 2)
        return bytes((start + i * step) % 16 for i in range(n))
    seen, out = set(), []
    while len(out) < n:
        e = _element(rng, dtype)
        if e not in seen:
            seen.add(e)
            out.append(e)
    return b"".join(out)


# ---------------------------------------------------------------------------------------------
# Expected layouts from nested Python lists of base indices (independent of any stride maths).


def _shape_of(v):
    return [len(v)] + (_shape_of(v[0]) if v else []) if isinstance(v, list) else []


def _flatten(v):
    return [i for item in v for i in _flatten(item)] if isinstance(v, list) else [v]


def _nest(flat, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _get(v, index):
    for i in index:
        v = v[i]
    return v


def _indices(shape):
    """All multi-indices of shape in C order."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in _indices(shape[1:]):
            yield (i,) + rest


def _expand(v, shape, target):
    if not target:
        return v
    items = v if shape[0] == target[0] else v * target[0]
    return [_expand(item, shape[1:], target[1:]) for item in items]


def expected_layout(n, ops):
    """(shape, base index of every element in C order) after applying ops to range(n)."""
    v = list(range(n))
    for name, arg in ops:
        if name == "reshape":
            v = _nest(_flatten(v), list(arg))
        elif name == "permute":
            shape = _shape_of(v)
            new_shape = [shape[p] for p in arg]
            flat = []
            for new_index in _indices(new_shape):
                old = [0] * len(shape)
                for k, p in enumerate(arg):
                    old[p] = new_index[k]
                flat.append(_get(v, old))
            v = _nest(flat, new_shape)
        elif name == "slice":

            def cut(item, triples):
                if not triples:
                    return item
                return [cut(x, triples[1:]) for x in item[slice(*triples[0])]]

            v = cut(v, arg)
        elif name == "broadcast":
            target = list(arg)
            while len(_shape_of(v)) < len(target):
                v = [v]
            v = _expand(v, _shape_of(v), target)
    return _shape_of(v), _flatten(v)


# ---------------------------------------------------------------------------------------------
# Reading memory: a Py_buffer through the C API, and element addresses.


class Py_buffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


PyBUF_FULL_RO = 0x100 | 0x10 | 0x08 | 0x04


def _c_api(name, restype, argtypes):
    # A function object of our own: ctypes.pythonapi.<name> is shared by the whole process,
    # and some libraries (pydlpack) set its argtypes to their own classes.
    fn = ctypes.pythonapi._FuncPtr((name, ctypes.pythonapi))
    fn.restype, fn.argtypes = restype, argtypes
    return fn


_get_buffer = _c_api(
    "PyObject_GetBuffer", ctypes.c_int, [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
)
_release_buffer = _c_api("PyBuffer_Release", None, [ctypes.POINTER(Py_buffer)])


class BufferView:
    """Holds a buffer of obj (PyBUF_FULL_RO) until close()."""

    def __init__(self, obj):
        self.view = Py_buffer()
        _get_buffer(obj, ctypes.byref(self.view), PyBUF_FULL_RO)  # raises on failure
        v = self.view
        self.data = v.buf or 0
        self.itemsize = v.itemsize
        self.readonly = bool(v.readonly)
        self.format = (v.format or b"B").decode()
        if v.ndim == 0:
            self.shape = []
        elif v.shape:
            self.shape = [v.shape[i] for i in range(v.ndim)]
        else:
            self.shape = [v.len // v.itemsize]
        self.strides = [v.strides[i] for i in range(v.ndim)] if v.strides else None
        self.suboffsets = bool(v.suboffsets)
        self.len_bytes = v.len

    def close(self):
        _release_buffer(ctypes.byref(self.view))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


class Memory:
    """The memory a describe() dict points at: data, shape, strides, itemsize, readonly."""

    def __init__(self, d, itemsize):
        self.buffer = None
        self.contents = None
        self.problems = []
        if "buffer" in d:
            self.buffer = BufferView(d["buffer"])
            b = self.buffer
            self.data, self.shape, self.itemsize = b.data, b.shape, b.itemsize
            self.strides = b.strides or c_strides(b.shape, b.itemsize)
            self.readonly = d.get("readonly")
            if self.readonly is None:
                self.readonly = b.readonly
            elif bool(self.readonly) != b.readonly:
                self.problems.append(f"readonly {self.readonly} but the buffer says {b.readonly}")
            if b.suboffsets:
                self.problems.append("the buffer has suboffsets")
            if b.itemsize != itemsize:
                self.problems.append(f"buffer itemsize {b.itemsize}, dtype needs {itemsize}")
        elif "data" in d:
            self.data, self.shape, self.itemsize = d["data"], list(d["shape"]), itemsize
            strides = d.get("strides")
            self.strides = c_strides(self.shape, itemsize) if strides is None else strides
            self.readonly = d.get("readonly")
        elif "bytes" in d:
            self.data = None
            self.contents = bytes(d["bytes"])
            self.shape, self.itemsize = list(d["shape"]), itemsize
            self.readonly = d.get("readonly")
        else:
            raise KeyError("describe() returned none of data, buffer, bytes")

    def elements(self):
        """(address or None, bytes) of every element in C order."""
        out = []
        for k, index in enumerate(_indices(self.shape)):
            if self.contents is not None:
                out.append((None, self.contents[k * self.itemsize:(k + 1) * self.itemsize]))
                continue
            address = self.data + sum(i * s for i, s in zip(index, self.strides))
            out.append((address, ctypes.string_at(address, self.itemsize)))
        return out

    def close(self):
        if self.buffer is not None:
            self.buffer.close()


def address_range(obj):
    b = BufferView(obj)
    try:
        return b.data, b.data + b.len_bytes
    finally:
        b.close()


# ---------------------------------------------------------------------------------------------
# The worker: one probe, results as JSON lines.


class Results:
    def __init__(self, path, probe):
        self.file = open(path, "a", encoding="utf-8")
        self.probe = probe

    def add(self, name, problems):
        line = {"name": f"{self.probe}: {name}", "ok": not problems, "diag": problems[:20]}
        if len(problems) > 20:
            line["diag"].append(f"... and {len(problems) - 20} more")
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()

    def skip(self, reason, name=None):
        line = {"name": f"{self.probe}: {name}" if name else f"{self.probe}", "ok": True,
                "skip": reason, "diag": []}
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()


def _exc(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def load_probe(name):
    """Loads probes/<name>.py like the driver. Returns (module, modules the file imported)."""
    sys.dont_write_bytecode = True
    kit_spec = importlib.util.spec_from_file_location("_probekit", PROBE_DIR / "_probekit.py")
    kit = importlib.util.module_from_spec(kit_spec)
    sys.modules["_probekit"] = kit
    kit_spec.loader.exec_module(kit)
    before = set(sys.modules)
    module_name = f"interopcheck_probe_{name}"
    spec = importlib.util.spec_from_file_location(module_name, PROBE_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    stdlib = sys.stdlib_module_names
    imported = sorted(
        m for m in set(sys.modules) - before
        if m != module_name and m.split(".")[0].lstrip("_") not in stdlib
        and m.split(".")[0] not in stdlib
    )
    return module, imported


def check_info(info):
    problems = []
    if not isinstance(info, dict):
        return [f"load() returned {type(info).__name__}, not dict"]
    for key, kind in [("version", str), ("devices", list), ("dtypes", list), ("layouts", list),
                      ("readonly", bool), ("exports", dict), ("imports", dict)]:
        if not isinstance(info.get(key), kind):
            problems.append(f"{key!r} is {info.get(key)!r}, not a {kind.__name__}")
    if not isinstance(info.get("fork", True), bool):
        problems.append(f"'fork' is {info.get('fork')!r}, not a bool")
    if problems:
        return problems
    if not info["version"]:
        problems.append("empty version")
    if not all(d in ("cpu", "cuda") for d in info["devices"]):
        problems.append(f"devices {info['devices']} hold something but 'cpu' and 'cuda'")
    if "cpu" not in info["devices"] and "cuda" not in info["devices"] and \
            not str(info.get("notes", {}).get("cuda", "")):
        problems.append("no device at all, and no notes['cuda'] saying why")
    for key, known in [("dtypes", DTYPES), ("layouts", LAYOUTS)]:
        values = info[key]
        if not values:
            problems.append(f"no {key}")
        if len(set(values)) != len(values):
            problems.append(f"duplicate {key}: {values}")
        problems += [f"unknown {key[:-1]} {v!r}" for v in values if v not in known]
    notes = info.get("notes", {})
    if not isinstance(notes, dict):
        problems.append("notes is not a dict")
        notes = {}
    for key, value in notes.items():
        if not isinstance(key, str) or not isinstance(value, str) or not value:
            problems.append(f"note {key!r}: {value!r} is not a non-empty str -> str")
        elif key not in DTYPES and key not in LAYOUTS and key not in ("cpu", "cuda"):
            problems.append(f"note for unknown name {key!r}")
        elif key in info["dtypes"] or key in info["layouts"] or key in info["devices"]:
            problems.append(f"note for {key!r}, which is declared supported")
    for name in list(DTYPES) + list(LAYOUTS):
        if name not in info["dtypes"] and name not in info["layouts"] and name not in notes:
            problems.append(f"{name!r} is left out without a note saying why")
    for key in ("exports", "imports"):
        for protocol, entry in info[key].items():
            if protocol not in PROTOCOLS:
                problems.append(f"{key}: unknown protocol {protocol!r}")
            if not isinstance(entry, dict):
                problems.append(f"{key}[{protocol!r}] is not a dict")
                continue
            if "call" in entry and not isinstance(entry["call"], str):
                problems.append(f"{key}[{protocol!r}]['call'] is not a str")
            if key == "imports":
                if not isinstance(entry.get("call"), str):
                    problems.append(f"imports[{protocol!r}] has no 'call' str")
                for flag in ("zero_copy", "typed"):
                    if not isinstance(entry.get(flag), bool):
                        problems.append(f"imports[{protocol!r}][{flag!r}] is not a bool")
                if entry.get("readonly") not in (True, False, "always"):
                    problems.append(f"imports[{protocol!r}]['readonly'] is not a bool or 'always'")
    compute = info.get("compute", {})
    if not isinstance(compute, dict) or not isinstance(compute.get("call", ""), str) or \
            not isinstance(compute.get("missing", {}), dict):
        problems.append(f"compute {compute!r} is not a dict with a 'call' str and a 'missing' dict")
    else:
        problems += [f"compute: missing {k!r}: {v!r} is not a known dtype with a reason"
                     for k, v in compute.get("missing", {}).items()
                     if k not in DTYPES or not isinstance(v, str) or not v]
    return problems


def check_description(d, dtype, shape_expected):
    """Checks of the describe() dict itself; returns problems."""
    problems = []
    if not isinstance(d, dict):
        return [f"describe() returned {type(d).__name__}"]
    if d.get("dtype") != dtype:
        problems.append(f"dtype {d.get('dtype')!r}, expected {dtype!r}")
    if list(d.get("device") or []) != ["cpu", 0]:
        problems.append(f"device {d.get('device')!r}, expected ['cpu', 0]")
    if d.get("readonly") not in (True, False, None):
        problems.append(f"readonly {d.get('readonly')!r} is not bool or None")
    if "data" in d:
        if not isinstance(d["data"], int):
            problems.append(f"data {d['data']!r} is not an int")
        if not isinstance(d.get("shape"), list) or not all(isinstance(n, int) for n in d["shape"]):
            problems.append(f"shape {d.get('shape')!r} is not a list of int")
        strides = d.get("strides")
        if strides is not None and (
            not isinstance(strides, list) or len(strides) != len(shape_expected)
            or not all(isinstance(s, int) for s in strides)
        ):
            problems.append(f"strides {strides!r} is not None or {len(shape_expected)} ints")
    return problems


def _flip_sign(element, at):
    """The element with the sign bit of its little-endian float at byte `at` (its last byte)
    flipped: the negation of an IEEE float or bfloat16, NaN patterns aside."""
    raw = bytearray(element)
    raw[at] ^= 0x80
    return bytes(raw)


def value_view_bytes(dtype, element, op):
    """What a neg_view or conj_view array's memory holds for a base element: its negation
    (conjugation); dtypes without one (bool, the unsigned ones, the 8-bit floats, which torch
    cannot negate; real dtypes for conj) as is."""
    n = len(element)
    if dtype.startswith("complex"):
        half = n // 2
        if op == "conj_view":
            return element[:half] + _flip_sign(element[half:], half - 1)
        return _flip_sign(element[:half], half - 1) + _flip_sign(element[half:], half - 1)
    if op == "conj_view" or dtype in ("bool", "int4") or dtype.startswith(("uint", "float8")):
        return element
    if dtype.startswith("int"):
        value = int.from_bytes(element, "little", signed=True)
        return ((-value) % (1 << (8 * n))).to_bytes(n, "little")
    return _flip_sign(element, n - 1)


def check_memory(mem, shape, base_indices, data, itemsize, source_range, held=None):
    """Elements of mem against the base pattern (`held` maps a base element's bytes to what
    the memory holds: lazy value views); returns problems."""
    problems = []
    if list(mem.shape) != list(shape):
        return [f"shape {list(mem.shape)}, expected {list(shape)}"]
    elements = mem.elements()
    held = held or (lambda element: element)
    want = [held(data[i * itemsize:(i + 1) * itemsize]) for i in base_indices]
    wrong = [k for k, (_, got) in enumerate(elements) if got != want[k]]
    if wrong:
        k = wrong[0]
        problems.append(
            f"{len(wrong)} of {len(elements)} elements differ; first at C index {k}: "
            f"{elements[k][1].hex()} instead of {want[k].hex()} (base element "
            f"{base_indices[k]})"
        )
    if mem.contents is None and elements:
        # A view of one base allocation puts base element i at base + i * itemsize.
        origin = elements[0][0] - base_indices[0] * itemsize
        off = [k for k, (a, _) in enumerate(elements) if a != origin + base_indices[k] * itemsize]
        if off:
            problems.append(
                f"{len(off)} element addresses do not follow one base allocation (a copy?); "
                f"first at C index {off[0]}"
            )
        lo, hi = source_range
        if any(lo <= a < hi for a, _ in elements):
            problems.append("the array aliases the data bytes passed to build()")
    return problems


def run_layout(probe, info, layout, results):
    n, ops = LAYOUTS[layout]
    shape, base_indices = expected_layout(n, ops)
    problems = []
    for dtype in info["dtypes"]:
        itemsize = DTYPES[dtype][0]
        data = pattern(dtype, n, zlib.crc32(f"{dtype}/{layout}".encode()))
        source_range = address_range(data) if data else (0, 0)
        for readonly in (False, True) if info["readonly"] else (False,):
            case = f"{dtype}{' readonly' if readonly else ''}"
            try:
                x = probe.build(data, dtype, [tuple(op) for op in ops], readonly=readonly)
                d = probe.describe(x)
            except Exception as e:
                problems.append(f"{case}: {_exc(e)}")
                continue
            found = check_description(d, dtype, shape)
            mem = None
            try:
                mem = Memory(d, itemsize)
                found += mem.problems
                view = ops[-1][0] if ops and ops[-1][0] in ("neg_view", "conj_view") else None
                held = (lambda e, dt=dtype, op=view: value_view_bytes(dt, e, op)) if view else None
                found += check_memory(mem, shape, base_indices, data, itemsize, source_range,
                                      held)
                if readonly and mem.readonly is not True:
                    found.append(f"built read-only but describes readonly={mem.readonly!r}")
            except Exception as e:
                found.append(f"reading its memory: {_exc(e)}")
            finally:
                if mem is not None:
                    mem.close()
            problems += [f"{case}: {p}" for p in found]
            del x, d
    label = ", ".join(info["dtypes"])
    results.add(f"layout {layout} ({label})", problems)


def pick_dtype(dtypes):
    for dtype in ("float32", "int32", "uint8"):
        if dtype in dtypes:
            return dtype
    return next((d for d in dtypes if d != "bfloat16"), None)


def check_export(probe, info, protocol):
    dtype = pick_dtype(info["dtypes"])
    layout = "contiguous" if "contiguous" in info["layouts"] else info["layouts"][0]
    n, ops = LAYOUTS[layout]
    try:
        x = probe.build(pattern(dtype, n, 7), dtype, [tuple(op) for op in ops])
        e = probe.export(x, protocol) if hasattr(probe, "export") else x
    except Exception as exc:
        return [f"build/export: {_exc(exc)}"]
    problems = []
    try:
        if protocol == "dlpack":
            # only that the export offers the protocol: what __dlpack_device__ and the capsule
            # say is the driver's to judge
            e.__dlpack_device__()
            capsule = e.__dlpack__()
            problems += _capsule_problems(capsule, ("dltensor", "dltensor_versioned"))
        elif protocol == "dlpack_capsule":
            problems += _capsule_problems(e, ("dltensor", "dltensor_versioned"))
        elif protocol == "array_interface":
            ai = e.__array_interface__
            if not isinstance(ai, dict) or ai.get("version") != 3:
                problems.append(f"__array_interface__ is not a version-3 dict: {ai!r}")
        elif protocol == "array_struct":
            problems += _capsule_problems(e.__array_struct__, (None,))
        elif protocol == "buffer":
            d = probe.describe(x)
            mem = Memory(d, DTYPES[dtype][0])
            b = BufferView(e)
            try:
                if mem.data is not None and b.data != mem.data and b.len_bytes:
                    problems.append(f"buffer at {b.data:#x}, describe() says {mem.data:#x}")
                nbytes = b.itemsize * _numel(b.shape)
                if nbytes != mem.itemsize * _numel(mem.shape):
                    problems.append(f"buffer of {nbytes} bytes, describe() shape {mem.shape}")
            finally:
                b.close()
                mem.close()
        elif protocol == "array":
            if not callable(getattr(e, "__array__", None)):
                problems.append("no callable __array__")
    except Exception as exc:
        problems.append(_exc(exc))
    return problems


_capsule_name = _c_api("PyCapsule_GetName", ctypes.c_char_p, [ctypes.py_object])


def _capsule_problems(obj, names):
    if type(obj).__name__ != "PyCapsule":
        return [f"{type(obj).__name__} is not a PyCapsule"]
    name = _capsule_name(obj)
    name = name.decode() if name is not None else None
    return [] if name in names else [f"capsule named {name!r}, expected one of {names}"]


class _Only:
    """Offers the NumPy array `x` over one protocol only: a subclass forwards that protocol's
    attributes to it, and nothing else."""

    def __init__(self, x):
        self._x = x


class OnlyDLPack(_Only):
    def __dlpack__(self, **kwargs):
        return self._x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._x.__dlpack_device__()


class OnlyArrayInterface(_Only):
    @property
    def __array_interface__(self):
        return self._x.__array_interface__


class OnlyArrayStruct(_Only):
    @property
    def __array_struct__(self):
        return self._x.__array_struct__


class OnlyArray(_Only):
    def __array__(self, dtype=None, copy=None):
        return self._x.__array__(dtype=dtype, copy=copy)


class OnlyArrow(_Only):
    """The NumPy array's elements as a 1-D Arrow array over the C data interface: pyarrow makes
    the export, over NumPy's own memory."""

    def __init__(self, x):
        import pyarrow

        super().__init__(pyarrow.array(x.reshape(-1)))

    def __arrow_c_array__(self, requested_schema=None):
        return self._x.__arrow_c_array__(requested_schema)


class OnlyArrowDevice(OnlyArrow):
    """The same Arrow array over the C device data interface (a CPU device array)."""

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        return self._x.__arrow_c_device_array__(requested_schema, **kwargs)


OnlyArrowDevice.__arrow_c_array__ = None  # offers the device method alone


class OnlyArrowStream(_Only):
    """The same elements as an Arrow stream of one array (a pyarrow ChunkedArray's), with no
    __arrow_c_array__ for a consumer to take instead."""

    def __init__(self, x):
        import pyarrow

        super().__init__(pyarrow.chunked_array([pyarrow.array(x.reshape(-1))]))

    def __arrow_c_stream__(self, requested_schema=None):
        return self._x.__arrow_c_stream__(requested_schema)

# The shape an import has, by protocol: Arrow arrays are 1-D.
_SHAPES = {"arrow": [24], "arrow_device": [24], "arrow_stream": [24]}

# How the source array is offered to a consumer over each protocol ("array": any other)
_OFFERS = {
    "arrow": OnlyArrow,
    "arrow_device": OnlyArrowDevice,
    "arrow_stream": OnlyArrowStream,
    "dlpack": OnlyDLPack,
    "dlpack_capsule": lambda src: src.__dlpack__(),
    "array_interface": OnlyArrayInterface,
    "array_struct": OnlyArrayStruct,
    "buffer": memoryview,
}


def _offer(src, protocol):
    return _OFFERS.get(protocol, OnlyArray)(src)


def check_import(probe, info, protocol, entry):
    import numpy as np

    dtype = pick_dtype(info["dtypes"])
    itemsize = DTYPES[dtype][0]
    data = pattern(dtype, 24, 11)
    # page-aligned, so that no consumer copies for alignment's sake (JAX wants 64 bytes)
    raw = np.empty(len(data) + 4096, np.uint8)
    start = -raw.ctypes.data % 4096
    src = raw[start:start + len(data)].view(dtype).reshape(2, 3, 4)
    src.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8)
    problems = []
    for readonly in (False, True):
        if readonly:
            if not entry["readonly"]:
                break
            src.setflags(write=False)
        try:
            obj = _offer(src, protocol)
        except BufferError:
            continue  # NumPy cannot offer a read-only array this way (legacy capsule)
        case = "read-only source: " if readonly else ""
        mem = None
        try:
            r = probe.consume(obj, protocol, dtype)
            d = probe.describe(r)
            mem = Memory(d, DTYPES.get(d.get("dtype"), (itemsize,))[0])
            found = list(mem.problems)
            if entry["typed"]:
                if d.get("dtype") != dtype:
                    found.append(f"dtype {d.get('dtype')!r}, expected {dtype!r}")
                shape = _SHAPES.get(protocol, [2, 3, 4])
                if list(mem.shape) != shape:
                    found.append(f"shape {list(mem.shape)}, expected {shape}")
            got = b"".join(b for _, b in mem.elements())
            if got != data:
                found.append(f"contents differ ({len(got)} bytes, expected {len(data)})")
            if entry["zero_copy"] and mem.contents is None and mem.data != src.ctypes.data:
                found.append("declared zero_copy, but the import is at another address")
            if readonly and mem.readonly is not True:
                found.append(f"declared readonly, but it describes readonly={mem.readonly!r}")
            if entry["readonly"] == "always" and mem.readonly is not True:
                found.append(f"declared always read-only, but it describes readonly={mem.readonly!r}")
            problems += [case + p for p in found]
        except Exception as exc:
            problems.append(case + _exc(exc))
        finally:
            if mem is not None:
                mem.close()
    return problems, dtype


def refuses_import(probe, info, protocol):
    """Whether consume() raises on a NumPy array offered over `protocol` (an import the probe
    does not claim: one that works is then checked as a claimed one)."""
    import numpy as np

    dtype = pick_dtype(info["dtypes"])
    try:
        probe.consume(_offer(np.zeros(24, dtype), protocol), protocol, dtype)
    except Exception:
        return True
    return False


def check_compute(probe, info):
    """compute() is an identity through the library's kernels: for every dtype it computes with,
    a new array of the same dtype and shape holding exactly the pattern's elements (finite,
    normal floats: no NaN, -0 or subnormal that an operation could change)."""
    missing = info.get("compute", {}).get("missing", {})
    problems = []
    for dtype in info["dtypes"]:
        if dtype in missing:
            continue
        itemsize = DTYPES[dtype][0]
        data = pattern(dtype, 24, zlib.crc32(f"{dtype}/compute".encode()))
        mem = None
        try:
            x = probe.build(data, dtype, [])
            d = probe.describe(x)
            r = probe.compute(x)
            c = probe.describe(r)
            found = check_description(c, dtype, [24])
            mem = Memory(c, itemsize)
            found += mem.problems + check_memory(mem, [24], list(range(24)), data, itemsize,
                                                 (0, 0))
            if "data" in d and "data" in c and d["data"] == c["data"]:
                found.append("the result is the array itself: nothing was computed")
            problems += [f"{dtype}: {p}" for p in found]
        except Exception as e:
            problems.append(f"{dtype}: {_exc(e)}")
        finally:
            if mem is not None:
                mem.close()
    return problems


def _fork_battery(probe, info):
    """What check_fork's child runs: every dtype built (flat), described and computed with,
    then an import over each protocol the probe imports on the CPU. The problems found."""
    import numpy as np

    problems = []
    missing = info.get("compute", {}).get("missing", {})
    for dtype in info["dtypes"]:
        try:
            x = probe.build(pattern(dtype, 24, 5), dtype, [])
            probe.describe(x)
            if callable(getattr(probe, "compute", None)) and dtype not in missing:
                probe.describe(probe.compute(x))
        except Exception as e:
            problems.append(f"{dtype}: {_exc(e)}")
    src = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for protocol, entry in info["imports"].items():
        if "cpu" not in entry.get("devices", ["cpu"]):
            continue
        try:
            probe.describe(probe.consume(_offer(src, protocol), protocol, "float64"))
        except Exception:
            pass  # whether it imports is check_import's; here only a hang or a crash counts
    return problems


def check_fork(probe, info):
    """A probe whose load() info says "fork": true (the default) is used in a process forked
    from one that ran load() (the child a worker forks for the cases of a pair that crashed):
    there, building, describing, computing with and importing arrays must neither hang nor
    crash. Runs in a child forked right after load(), before this worker runs any library code
    of its own. The problems found."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        signal.alarm(WORKER_TIMEOUT // 2)  # a hang: the child dies of it, and says so below
        try:
            found = _fork_battery(probe, info)
        except BaseException as e:
            found = [_exc(e)]
        os.write(write_end, json.dumps(found).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        how = "hung" if os.WTERMSIG(status) == signal.SIGALRM else "died"
        return [f"the forked process {how} (signal {os.WTERMSIG(status)}): declare fork=False "
                "(probes/README.md, \"fork\") or find what it waits for"]
    return json.loads(text) if text else ["the forked process wrote no result"]


def worker(name, path):
    results = Results(path, name)
    try:
        probe, imported = load_probe(name)
    except Exception as e:
        results.add("probe file loads", [_exc(e)])
        return
    results.add(
        "loading the file imports no library",
        [f"loading the file imported {', '.join(imported[:8])}"] if imported else [],
    )
    missing = [f for f in ("load", "build", "describe", "consume")
               if not callable(getattr(probe, f, None))]
    if hasattr(probe, "NAME") and not re.fullmatch(r"[a-z0-9_]+", str(probe.NAME)):
        missing.append(f"NAME {probe.NAME!r} is not [a-z0-9_]+")
    if hasattr(probe, "export") and not callable(probe.export):
        missing.append("export is not callable")
    results.add("has the probe interface", [f"missing {m}" for m in missing])
    try:
        info = probe.load()
    except ModuleNotFoundError as e:
        # A library outside the default set (cuDF needs a GPU): the driver records the import
        # error; there is nothing to exercise here.
        results.skip(f"load(): the library is not installed ({e})")
        return
    except Exception as e:
        results.add("load() succeeds", [_exc(e)])
        return
    problems = check_info(info)
    results.add("load() returns every required key with valid values", problems)
    if problems:
        return
    # Only the CPU can be exercised here: GPU builds and imports need a device (a GPU library
    # on a machine without one declares no devices and says why, which check_info verified).
    if "cpu" not in info["devices"]:
        results.add("declares why it builds nothing here",
                    [] if info.get("notes", {}).get("cuda") else ["no notes['cuda']"])
        return
    # First, before this process runs any library code that would start threads of its own.
    what = "in a process forked after load(): building, describing, computing and importing work"
    if info.get("fork", True):
        results.add(what, check_fork(probe, info))
    else:
        results.skip("it says fork=False: its crashing pairs' cases run in a worker", what)
    if name == "tensorflow":
        what = "a failed CHECK writes its message and no native stack trace"
        problems, skipped = check_tensorflow_traces(probe)
        if skipped:
            results.skip(skipped, what)
        else:
            results.add(what, problems)
    for layout in info["layouts"]:
        run_layout(probe, info, layout, results)
    for protocol, entry in info["exports"].items():
        if "cpu" in entry.get("devices", ["cpu"]):
            results.add(f"export {protocol}", check_export(probe, info, protocol))
    for protocol, entry in info["imports"].items():
        if "cpu" not in entry.get("devices", ["cpu"]):
            continue
        if entry.get("claimed", True) is False and refuses_import(probe, info, protocol):
            # fed though not claimed: an exception is its answer, which the matrix reports
            results.add(f"import {protocol} ({entry['call']}), not claimed: it refuses", [])
            continue
        problems, dtype = check_import(probe, info, protocol, entry)
        results.add(f"import {protocol} ({entry['call']}, {dtype})", problems)
    if callable(getattr(probe, "compute", None)):
        call = info.get("compute", {}).get("call", "compute()")
        results.add(f"compute ({call}) gives back every dtype's elements in a new array",
                    check_compute(probe, info))


# A CHECK TensorFlow fails on a misaligned DLPack import: it aborts the process that computes.
_FAILED_CHECK = """
x = numpy.zeros(25, dtype=bool)[1:]
y = tf.experimental.dlpack.from_dlpack(x.__dlpack__())
tf.math.logical_or(y, y)
"""


def _failed_check_output(tf):
    """What a process writes when it fails TensorFlow's CHECK: a child forked from this one,
    `tf` the TensorFlow module it holds, with its stderr on a pipe."""
    import numpy

    namespace = {"numpy": numpy, "tf": tf}
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(write_end, 2)
        signal.alarm(WORKER_TIMEOUT // 2)  # a child that hangs dies, and says nothing
        try:
            exec(_FAILED_CHECK, namespace)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    os.waitpid(pid, 0)
    return text


def check_tensorflow_traces(probe):
    """The tensorflow probe turns off the native stack trace of a failed CHECK (~120 ms of
    symbol lookups per crash, after the message a diagnostic quotes): the message stays and
    no frame follows. Returns (problems, why skipped). The control, TensorFlow as imported
    before load(), must fail the CHECK and write frames: a TensorFlow that no longer aborts
    here, or writes no trace of its own, leaves nothing to check."""
    frame = re.compile(r"^\s*@\s+0x[0-9a-f]+", re.M)
    try:
        control = subprocess.run(
            [sys.executable, "-c", "import numpy\nimport tensorflow as tf\n" + _FAILED_CHECK],
            capture_output=True, text=True, timeout=WORKER_TIMEOUT // 2, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return [f"the control hung past {WORKER_TIMEOUT // 2} s"], None
    if "Check failed" not in control.stderr or not frame.search(control.stderr):
        return [], ("TensorFlow as imported writes no failed CHECK with native frames here: "
                    f"{control.stderr.strip()[-200:]!r}")
    text = _failed_check_output(probe.tf)
    problems = []
    if "Check failed" not in text:
        problems.append(f"no failed CHECK in the output: {text.strip()[-300:]!r}")
    if frame.search(text):
        problems.append(f"native frames follow the failed CHECK: {frame.search(text).group()!r}")
    return problems, None


# ---------------------------------------------------------------------------------------------
# The parent: one worker process per probe, TAP out.


def check_kit():
    """The kit's storage starts on its ALIGNMENT boundary with the bytes it was given, whatever
    the size: otherwise an outcome that depends on alignment (jax copies what is not aligned)
    would change from run to run with where malloc put the array."""
    import ctypes

    import numpy

    kit_spec = importlib.util.spec_from_file_location("_probekit", PROBE_DIR / "_probekit.py")
    kit = importlib.util.module_from_spec(kit_spec)
    kit_spec.loader.exec_module(kit)
    problems = {"numpy_from_bytes": [], "aligned_storage": []}
    keep = []  # live at once, so that the allocator cannot hand back one aligned block
    for size in list(range(0, 130)) + [4093, 65536 + 24]:
        data = bytes((i * 7 + size) & 0xFF for i in range(size))
        array = kit.numpy_from_bytes(numpy, data, "uint8")
        storage = kit.aligned_storage(data)
        keep += [array, storage]
        if array.ctypes.data % kit.ALIGNMENT or array.tobytes() != data:
            problems["numpy_from_bytes"].append(
                f"{size} bytes: address {array.ctypes.data:#x}, contents equal "
                f"{array.tobytes() == data}")
        address = ctypes.addressof(storage)
        if address % kit.ALIGNMENT or bytes(storage)[:size] != data or len(storage) < 1:
            problems["aligned_storage"].append(f"{size} bytes: address {address:#x}")
    return [{"name": f"_probekit.{name} starts on a {kit.ALIGNMENT}-byte boundary and holds "
                     "the bytes given", "ok": not found, "diag": found[:5]}
            for name, found in problems.items()]


def run_worker(name):
    fd, path = tempfile.mkstemp(prefix=f"probe-{name}-", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", name, path],
            capture_output=True, text=True, timeout=WORKER_TIMEOUT, env=env, cwd=ROOT,
        )
        rc, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else ""
        rc = f"a timeout after {WORKER_TIMEOUT} s"
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    os.unlink(path)
    if rc != 0:
        why = rc if isinstance(rc, str) else f"signal {-rc}" if rc < 0 else f"status {rc}"
        tail = [line for line in stderr.splitlines() if line.strip()][-6:]
        lines.append({"name": f"{name}: worker finished cleanly", "ok": False,
                      "diag": [f"worker ended with {why}"] + tail})
    return lines


def main(argv):
    if argv[:1] == ["--worker"]:
        worker(argv[1], argv[2])
        return 0
    available = sorted(p.stem for p in PROBE_DIR.glob("*.py") if not p.name.startswith("_"))
    names = argv or available
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"unknown probes: {', '.join(unknown)} (have: {', '.join(available)})",
              file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        outcomes = list(pool.map(run_worker, names))
    tests = [t for lines in outcomes for t in lines] + check_kit()
    print(f"1..{len(tests)}")
    failed = 0
    for number, t in enumerate(tests, 1):
        if t.get("skip"):
            print(f"ok {number} - {t['name']} # SKIP {t['skip']}")
        else:
            print(f"{'ok' if t['ok'] else 'not ok'} {number} - {t['name']}")
        for line in t["diag"]:
            print(f"# {line}")
        failed += not t["ok"]
    print(f"# {len(tests) - failed} of {len(tests)} passed, {len(names)} probes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
