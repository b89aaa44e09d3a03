"""Writes the reproducer of a finding: a short standalone Python script that uses only the
libraries involved (and ctypes where interopcheck's own C consumer is a side, or where the fault
is in a C structure), shows what goes wrong, and says whether it still does.

The worker calls generate() for a finding's example case. Each probe describes how its library
builds, exports, imports and inspects arrays in a `REPRO` dict (see probes/README.md); this file
knows the protocols and the rules, and turns a failure into the few lines that show it.

A generated script prints what it sees, then ends with one line and an exit status:
    REPRODUCED: ...        exit 1   the problem is there (a crash shows as the process dying)
    NOT REPRODUCED: ...    exit 0   the problem is gone
`interopcheck repro --run` relies on that line. The script never needs interopcheck.
"""

import inspect
import json
import re

import _probekit

MAX_LIST = 24  # elements printed of a list

# --- The pieces every script may need -----------------------------------------------------------

VERDICT = '''
def reproduced(what):
    print("REPRODUCED:", what)
    sys.exit(1)


def not_reproduced(what):
    print("NOT REPRODUCED:", what)
    sys.exit(0)
'''

BUFFER_HELPER = '''
class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


PyBUF = {"SIMPLE": 0, "WRITABLE": 0x1, "FORMAT": 0x4, "ND": 0x8, "STRIDES": 0x18,
         "C_CONTIGUOUS": 0x38, "F_CONTIGUOUS": 0x58, "ANY_CONTIGUOUS": 0x98, "INDIRECT": 0x118,
         "CONTIG": 0x9, "CONTIG_RO": 0x8, "STRIDED": 0x19, "STRIDED_RO": 0x18,
         "RECORDS": 0x1d, "RECORDS_RO": 0x1c, "FULL": 0x11d, "FULL_RO": 0x11c}
_get = ctypes.pythonapi.PyObject_GetBuffer
_get.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
_release = ctypes.pythonapi.PyBuffer_Release
_release.argtypes = [ctypes.POINTER(Py_buffer)]


def get_buffer(obj, flags):
    """PyObject_GetBuffer(obj, flags), as a C consumer calls it: the fields, then released."""
    view = Py_buffer()
    _get(obj, ctypes.byref(view), flags)  # raises what the exporter raised
    ndim = view.ndim
    info = {"address": view.buf, "len": view.len, "itemsize": view.itemsize,
            "readonly": view.readonly, "ndim": ndim,
            "format": view.format.decode() if view.format else None,
            "shape": [view.shape[i] for i in range(ndim)] if view.shape else None,
            "strides": [view.strides[i] for i in range(ndim)] if view.strides else None,
            "suboffsets": bool(view.suboffsets)}
    if not (flags & 0x10):
        # no strides asked for: the exporter promises len contiguous bytes at buf
        info["bytes"] = ctypes.string_at(view.buf, view.len) if view.len else b""
    _release(ctypes.byref(view))
    return info
'''

# DLPack's tensor structs as ctypes layouts: a reproducer declares them (DLPACK_HELPER), and
# the test probes that build DLPack exports by hand run this same text (tests/probes/_testkit.py).
DLTENSOR_STRUCTS = '''
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
'''

DLPACK_HELPER = DLTENSOR_STRUCTS + '''

class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_name = ctypes.pythonapi.PyCapsule_GetName
_name.argtypes, _name.restype = [ctypes.py_object], ctypes.c_char_p
_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.argtypes, _pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p


def capsule_struct(capsule):
    """The capsule's name and its managed tensor struct (in place, not a copy)."""
    name = _name(capsule)
    struct = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return name.decode(), struct.from_address(_pointer(capsule, name))


def capsule_info(capsule):
    name, managed = capsule_struct(capsule)
    t = managed.dl_tensor
    info = {"name": name, "device": (t.device.device_type, t.device.device_id),
            "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes), "ndim": t.ndim,
            "data": t.data, "byte_offset": t.byte_offset}
    if name == "dltensor_versioned":
        info["version"] = (managed.major, managed.minor)
        info["flags"] = managed.flags
    return info
'''

DELETER_HELPER = '''
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
deleter_calls = []
_keep = []


def counting_deleter(capsule):
    """Makes the capsule's deleter count its calls, then do what it did."""
    name, managed = capsule_struct(capsule)
    original = DELETER(managed.deleter) if managed.deleter else None

    def deleter(pointer):
        deleter_calls.append(pointer)
        if original:
            original(pointer)

    _keep.append(DELETER(deleter))
    managed.deleter = ctypes.cast(_keep[-1], ctypes.c_void_p).value
    return capsule
'''

# What the consumer receives: the export with only the case's protocol (the methods pass the
# consumer's own arguments, and a buffer request's flags, on to the export unchanged).
# What the reproducer hands the consumer: the export wrapped in a class that offers the case's
# protocol alone, each member forwarding to the export.
_PROPERTY = """
    @property
    def {name}(self):
        return exported.{name}
"""
_METHOD = """
    def {name}(self, *args, **kwargs):
        return exported.{name}(*args, **kwargs)
"""


def _only(what, *members):
    return f'''
class Exported:
    """The export, offering only {what}."""
''' + "".join(members)


ONLY_PROTOCOL = {
    "buffer": _only("the buffer protocol (PEP 688): the consumer's flags go on to\n    the "
                    "export's own buffer slot", _METHOD.format(name="__buffer__")),
    "array_interface": _only("__array_interface__", _PROPERTY.format(name="__array_interface__")),
    "array_struct": _only("__array_struct__", _PROPERTY.format(name="__array_struct__")),
    "array": _only("__array__", _METHOD.format(name="__array__")),
    "dlpack": _only("__dlpack__ and __dlpack_device__", _METHOD.format(name="__dlpack__"),
                    _METHOD.format(name="__dlpack_device__")),
    "cuda_array_interface": _only("__cuda_array_interface__",
                                  _PROPERTY.format(name="__cuda_array_interface__")),
    "arrow": _only("__arrow_c_array__", _METHOD.format(name="__arrow_c_array__")),
    "arrow_device": _only("__arrow_c_device_array__",
                          _METHOD.format(name="__arrow_c_device_array__")),
    "arrow_stream": _only("__arrow_c_stream__", _METHOD.format(name="__arrow_c_stream__")),
}

# --- Values the script builds its array from --------------------------------------------------


def _value(dtype, i):
    if dtype == "bool":
        return i % 3 == 0
    if dtype in _probekit.INT4_DTYPES:
        return i % 16 - (8 if dtype == "int4" and i % 16 >= 8 else 0)
    if dtype.startswith(("int", "uint")):
        return i
    if dtype.startswith("complex"):
        return complex(i, -i)
    return float(i)


def _article(word):
    """"an" or "a" before a dtype name in a reproducer's sentences, as the report's own text
    has it (ic_text_article): "an int4", "a uint4"."""
    word = word.lower()
    return "an" if word[:1] in ("a", "e", "i", "o") or word.startswith("un") else "a"


def _literal(value):
    if isinstance(value, complex):
        return f"complex({value.real!r}, {value.imag!r})"
    return repr(value)


def _list_literal(values):
    return "[" + ", ".join(_literal(v) for v in values) + "]"


class _View:
    """The base values and the layout the case's ops make of them (strides in elements), enough
    to say which values the array holds where."""

    def __init__(self, values):
        self.values = values
        self.layout = _probekit.Strided([len(values)], [1])

    def apply(self, ops):
        strided = _probekit.Strided
        self.layout = _probekit.apply_ops(self.layout, ops, broadcast=strided.broadcast,
                                          unit_stride=strided.unit_stride,
                                          neg_view=strided.value_view,
                                          conj_view=strided.value_view,
                                          requires_grad=strided.value_view,
                                          subclass=strided.value_view,
                                          other_device=strided.value_view)
        return self

    @property
    def shape(self):
        return self.layout.shape

    def tolist(self, dim=0, offset=None):
        layout = self.layout
        offset = layout.offset if offset is None else offset
        if dim == len(layout.shape):
            return self.values[offset]
        return [self.tolist(dim + 1, offset + i * layout.strides[dim])
                for i in range(layout.shape[dim])]

    def flat(self):
        out = []

        def walk(item):
            if isinstance(item, list):
                for part in item:
                    walk(part)
            else:
                out.append(item)

        walk(self.tolist())
        return out


# --- How one library does things ---------------------------------------------------------------


# The elements of a buffer whose library has no tolist() (REPRO `elements`): the bytes `b` read
# in the format `f` and the shape of the buffer `m`. memoryview.tolist() reads native
# single-character formats only, not "<f" (ctypes), complex ("Zf") or MLX's "bfloat16", so the
# bytes are cast to the format without its byte-order mark: complex ones as (real, imaginary)
# pairs, bfloat16 widened to float32.
_READ_BUFFER = (
    "[] if not b else (lambda c, w, d: c(c, w, d))(lambda c, w, d: "
    "[c(c, e, d - 1) for e in w] if d else complex(*w), "
    "memoryview(b).cast(f[1], [*m.shape, 2]).tolist(), m.ndim) "
    'if f in ("Zf", "Zd") else memoryview(b"".join((b"\\0\\0" + b[i:i + 2], '
    'b[i:i + 2] + b"\\0\\0")[sys.byteorder == "big"] for i in range(0, len(b), 2)))'
    '.cast("f", m.shape).tolist() if f == "bfloat16" else '
    "memoryview(b).cast(f, m.shape).tolist()"
)
_NATIVE_FORMAT = '.format.lstrip("@=" + "<>"[sys.byteorder == "big"])'

_ELEMENTS = {
    # {y} is a buffer: its C-order bytes, in its own format and shape
    "buffer": f"(lambda b, m, f: {_READ_BUFFER})({{y}}.tobytes(), {{y}}, {{y}}{_NATIVE_FORMAT})",
    # {y} holds the exported bytes, untyped: they are read as the elements of the export, `obj`
    # in the script, which is how interopcheck compares them; bytes of another size stay raw
    "export": (f"(lambda b, m, f: list(b) if len(b) != m.nbytes else {_READ_BUFFER})"
               f"(bytes({{y}}), (_m := memoryview(obj)), _m{_NATIVE_FORMAT})"),
}




class Library:
    """A probe's REPRO description, with the defaults of NumPy-like libraries."""

    DEFAULTS = {
        **_probekit.OP_LINES,
        "export": "x",
        "tolist": "{y}.tolist()",
        "dtype": "str({y}.dtype)",
        "shape": "tuple({y}.shape)",
    }

    def __init__(self, module, name):
        self.name = name
        self.spec = dict(getattr(module, "REPRO", {}) or {})
        if not self.spec:
            raise NotImplementedError(f"the {name} probe has no REPRO description")
        if "elements" in self.spec:
            self.spec["tolist"] = _ELEMENTS[self.spec["elements"]]

    def get(self, key, default=None):
        return self.spec.get(key, self.DEFAULTS.get(key, default))

    def imports(self):
        return [line for line in self.get("import", "").splitlines() if line]

    def dtype(self, name):
        spelled = self.get("dtypes", {}).get(name)
        return spelled if spelled else self.get("dtype_name", "{ns}.{dtype}").format(
            ns=self.get("ns", ""), dtype=name)

    def build(self, dtype, ops, readonly, nulls=False):
        """Lines that make `x` from `values` (the base, 1-D), with the layout's ops; with
        `nulls`, `values` holds None for each null (REPRO `build_nulls`, else `build`, which
        then takes None itself)."""
        make = self.get("build_nulls") if nulls and self.get("build_nulls") else self.get("build")
        if isinstance(make, dict):  # a template for some dtypes, "default" for the others
            make = make.get(dtype, make["default"])
        if callable(make):
            return make(dtype, ops, readonly)
        lines = [f"x = {make.format(ns=self.get('ns', ''), dtype=self.dtype(dtype))}"]
        for name, arg in ops:
            template = self.get(name)
            if template is None:
                raise NotImplementedError(f"{self.name} has no {name} view in its REPRO")
            if callable(template):
                lines.append(template(arg))
                continue
            lines.append(template.format(x="x", ns=self.get("ns", ""),
                                         **_probekit.op_fields(name, arg)))
        if readonly:
            line = self.get("make_readonly")
            if not line:
                raise NotImplementedError(f"{self.name} cannot make a read-only array")
            lines.append(line)
        return lines

    def export(self, protocol):
        value = self.get("export")
        return value.get(protocol, "x") if isinstance(value, dict) else value

    def consume(self, protocol, dtype, obj="obj"):
        calls = self.get("consume", {})
        if protocol not in calls:
            raise NotImplementedError(f"{self.name} has no {protocol} import in its REPRO")
        return calls[protocol].format(obj=obj, ns=self.get("ns", ""), dtype=self.dtype(dtype),
                                      dtype_name=dtype)

    def expr(self, key, y):
        template = self.get(key)
        return None if template is None else template.format(y=y, ns=self.get("ns", ""))

    def item(self, key, dtype, y, value="new"):
        """One element of `y` at `index` as the probe's read() or write() reaches it (REPRO
        `read` and `write`: templates of {y}, {index} and {value}, or functions of the dtype
        name giving one)."""
        template = self.get(key)
        if callable(template):
            template = template(dtype)
        if template is None:
            raise NotImplementedError(f"{self.name} has no {key} in its REPRO")
        return template.format(y=y, index="index", value=value, ns=self.get("ns", ""))

    def compute(self, dtype, y="y"):
        """The library's own operation on its import `y` (REPRO `compute`: a template of {y},
        or a function of the dtype name giving one), as compute() runs it."""
        template = self.get("compute")
        if callable(template):
            template = template(dtype)
        if template is None:
            raise NotImplementedError(f"{self.name} has no compute in its REPRO")
        return template.format(y=y, ns=self.get("ns", ""))


# --- The script --------------------------------------------------------------------------------


# The keyword a consumer-keyword variant passes to the consumer's import
FROM_KEYWORDS = {"from_copy": "copy=True", "from_no_copy": "copy=False",
                 "from_copy_none": "copy=None"}


class Script:
    def __init__(self, failure, ops, base_len, producer, consumer, valid=None):
        self.f = failure
        self.case = failure["case"]
        parts = self.case.split(".")
        self.protocol, self.producer_name, self.consumer_name = parts[0], parts[1], parts[2]
        self.device, self.dtype, self.layout = parts[3], parts[4], parts[5]
        self.variant = parts[6] if len(parts) > 6 else ""
        self.ops = [(name, arg) for name, arg in ops]
        self.base = [_value(self.dtype, i) for i in range(base_len)]
        if valid is not None:  # the nulls variants: None where the element is null
            self.base = [v if ok else None for v, ok in zip(self.base, valid)]
        self.view = _View(list(self.base)).apply(self.ops)
        self.producer = Library(producer, self.producer_name)
        self.consumer = Library(consumer, self.consumer_name) if consumer is not None else None
        self.helpers = set()
        self.body = []

    # the pieces of the body

    def line(self, *lines):
        self.body.extend(lines)

    def expected_lines(self):
        expected = self.view.tolist()
        text = repr(expected) if self.dtype != "bool" else repr(expected)
        if any(isinstance(v, complex) for v in self.view.flat()):
            text = re.sub(r"\(?(-?[0-9.]+)([+-][0-9.]+)j\)?", r"complex(\1, \2)", text)
        return [f"expected = {text}  # the elements of x, in C order"]

    def build_lines(self):
        readonly = self.variant == "readonly"
        return ([f"values = {_list_literal(self.base)}"] +
                self.producer.build(self.dtype, self.ops, readonly, nulls=self.variant == "nulls"))

    def request(self):
        return self.f.get("request", "")

    def dlpack_call(self, target="x"):
        """The consumer's __dlpack__ request as code, from the text the proxy recorded."""
        m = re.fullmatch(r"__dlpack__\((.*)\)", self.request())
        args = m.group(1) if m else ""
        if not re.fullmatch(r"[\w=(), \-]*", args):
            args = "max_version=(1, 3)"
        return f"{target}.__dlpack__({args})"

    def buffer_flags(self):
        names = [n.strip() for n in self.request().split("|")]
        flags = [f'PyBUF["{n[6:]}"]' for n in names if n.startswith("PyBUF_")]
        return " | ".join(flags) if flags else 'PyBUF["FULL_RO"]'

    def export_expr(self):
        return self.producer.export(self.protocol)

    def exported(self):
        """Lines binding `obj`, what the consumer gets: the export, offering only the case's
        protocol, as interopcheck's proxy did (a consumer may otherwise take another protocol
        of the same object)."""
        wrapper = ONLY_PROTOCOL.get(self.protocol)
        if not wrapper:
            return [f"obj = {self.export_expr()}"]
        bind = ["obj = Exported()"]
        if self.protocol == "buffer":
            # A Python wrapper hands the consumer CPython's copy of the exporter's fields (a
            # memoryview fills in strides the exporter left NULL): an object that offers the
            # buffer protocol alone goes to the consumer as it is, as interopcheck's proxy
            # passes the exporter's own Py_buffer.
            bind = [
                "others = (\"__dlpack__\", \"__array_interface__\", \"__array_struct__\", "
                "\"__array__\",",
                "          \"__cuda_array_interface__\")",
                "obj = Exported() if any(hasattr(exported, n) for n in others) else exported",
            ]
        return [f"exported = {self.export_expr()}", "", ""] + wrapper.strip("\n").splitlines() + [
            "", ""] + bind

    def consume_expr(self, obj="obj"):
        """The consumer's import, with the keyword the case's variant passed (from_copy and
        the like; the device as the probe's REPRO `device` spells it, "cpu" by default)."""
        if self.variant == "from_c_api":
            cls = self.consumer.get("c_api_type")
            if not cls:
                raise NotImplementedError(f"{self.consumer_name} has no c_api_type in its REPRO")
            self.need("c_api")
            return f"c_api_import({cls}, {obj})"
        keyword = FROM_KEYWORDS.get(self.variant)
        if self.variant == "from_device":
            keyword = f"device={self.consumer.get('device', repr(self.device))}"
        return self.consumer.consume(self.protocol, self.dtype,
                                     f"{obj}, {keyword}" if keyword else obj)

    def need(self, *helpers):
        self.helpers.update(helpers)

    # the whole script

    def render(self):
        f = self.f
        culprit = f.get("culprit", "")
        header = [
            f"# Reproducer of interopcheck finding {f.get('finding', '')} ({f.get('severity', '')})",
            f"# rule {f.get('rule', '')}: {f.get('rule_text', '')}",
            f"# culprit: {culprit} (the {f.get('side', '')}); example case: {self.case}",
            f"# what interopcheck saw: {_one_line(f.get('note', ''), 300)}",
            "# Run it with the Python the libraries are installed in. It prints what it sees and",
            "# ends with REPRODUCED (exit status 1) while the problem is there, NOT REPRODUCED",
            "# (exit status 0) once it is gone; a crash shows as the process dying.",
            f"# Written by interopcheck {f.get('tool', '')}.",
        ]
        imports = ["import sys"]
        if self.helpers & {"buffer", "dlpack", "deleter"}:
            imports.append("import ctypes")
        if "gc" in self.helpers:
            imports.append("import gc")
        libs = [line for line in self.producer.imports() if line not in imports]
        if self.consumer:
            libs += [line for line in self.consumer.imports() if line not in libs + imports]
        code = "\n".join(self.build_lines() + self.body)
        for lib in (self.producer, self.consumer):
            for token, line in (lib.get("extra_imports", {}) if lib else {}).items():
                if token in code and line not in libs + imports:
                    libs.append(line)
        blocks = ["\n".join(header), "\n".join(imports + libs), VERDICT.strip("\n")]
        if "buffer" in self.helpers:
            blocks.append(BUFFER_HELPER.strip("\n"))
        if self.helpers & {"dlpack", "deleter"}:
            blocks.append(DLPACK_HELPER.strip("\n"))
        if "deleter" in self.helpers:
            blocks.append(DELETER_HELPER.strip("\n"))
        if "c_api" in self.helpers:
            # the import through a library's own table, as the probe kit runs it
            blocks.append("import functools\nimport types\n\n\n" + "\n\n".join(
                inspect.getsource(f).strip("\n")
                for f in (_probekit._capsule_api, _probekit.c_api_import)))
        blocks.append("\n".join(self.build_lines() + self.body))
        return "\n\n\n".join(blocks[:3]) + "\n\n\n" + "\n\n\n".join(blocks[3:]) + "\n"


def _one_line(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- What each kind of failure shows -------------------------------------------------------------

def _show_exchange(s):
    """The import the consumer does, as it does it."""
    if s.consumer is None:
        _reference_request(s, "result")
        return
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}")


def _reference_request(s, result):
    """interopcheck's own consumer's request, done with ctypes where it is a C call."""
    if s.protocol == "dlpack":
        s.line(f"{result} = {s.dlpack_call()}")
    elif s.protocol == "buffer":
        s.need("buffer")
        s.line(f"{result} = get_buffer({s.export_expr()}, {s.buffer_flags()})")
    elif s.protocol == "array":
        m = re.fullmatch(r"__array__\((.*)\)", s.request())
        args = m.group(1) if m and re.fullmatch(r"[\w=, ]*", m.group(1)) else ""
        s.line(f"{result} = x.__array__({args})")
    elif s.protocol == "dlpack_capsule":
        s.line(f"{result} = {s.export_expr()}")
    elif s.protocol in ("arrow", "arrow_device", "arrow_stream"):
        method = {"arrow": "__arrow_c_array__", "arrow_device": "__arrow_c_device_array__",
                  "arrow_stream": "__arrow_c_stream__"}
        s.line(f"{result} = x.{method[s.protocol]}()")
    else:
        attr = {"array_interface": "__array_interface__", "array_struct": "__array_struct__",
                "cuda_array_interface": "__cuda_array_interface__"}[s.protocol]
        s.line(f"{result} = x.{attr}")


def _died_computing(s):
    """Whether the worker died in the consumer probe's compute() (the crash's note names the
    probe function it died in)."""
    return s.consumer is not None and "in compute() of " in s.f.get("note", "")


def crash(s):
    s.line('print("importing; a crash ends the process here", flush=True)')
    _show_exchange(s)
    if _died_computing(s):
        s.line('print("imported; computing with the import, a crash ends the process here", '
               "flush=True)",
               f"r = {s.consumer.compute(s.dtype)}")
        _materialise(s, "r")
    s.line('not_reproduced("the exchange finished without crashing")')


def _materialise(s, name):
    """Reads `name` back, so that a library that computes lazily or asynchronously (JAX, MLX)
    has run its kernels before the script goes on."""
    s.line(f"print({s.consumer.expr('tolist', name)})")


def compute(s):
    """The consumer's own operation on an import that holds the right elements: it raises, or
    gives other values (an identity such as y * 1 gives back what the import holds)."""
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}",
           f"want = {s.consumer.expr('tolist', 'y')}",
           f'print("{s.consumer_name} imported:", want)')
    op = s.consumer.compute(s.dtype)
    shown = op.replace('"', "'")
    if s.f.get("rule") == "exchange.compute_error":
        # read back inside the try: a lazy library (MLX) raises only when the result is used
        s.line("try:",
               f"    r = {op}",
               f"    got = {s.consumer.expr('tolist', 'r')}",
               "except Exception as e:",
               f'    reproduced(f"{s.consumer_name} imported the array, then raised computing '
               f'{_escape(op)} with it: {{type(e).__name__}}: {{e}}")',
               f'not_reproduced("{shown} ran")')
        return
    s.line(f"r = {op}",
           f"got = {s.consumer.expr('tolist', 'r')}",
           f'print("{shown} gives:", got)',
           "if got != want:",
           f'    reproduced("{s.consumer_name} computes other values than its import holds: '
           f'{shown} is not the identity here")',
           f'not_reproduced("{shown} gives the values of the import")')


OTHER_VALUE = """
def other(v):
    # a value the element's dtype holds exactly, and not v (interopcheck writes the same)
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return 0 if v else 1
    if isinstance(v, complex):
        return complex(-v.real if v.real else 1.0, v.imag)
    return -v if v else 1.0
"""


def write_through(s):
    """One element written through one side and read through the other, in the direction and
    at the element the note names (ic_write_through.c writes it: "W wrote V at [i,j] of its
    import|array")."""
    m = re.match(r"(\S+) wrote .*? at \[([\d,]*)\] of its (import|array)", s.f.get("note", ""))
    if not m:
        raise NotImplementedError("the write-through note names no element")
    parts = [p for p in m.group(2).split(",") if p]
    index = f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    libs = [(s.consumer, "y", s.consumer_name), (s.producer, "x", s.producer_name)]
    (writer, w, wname), (reader, r, rname) = libs if m.group(3) == "import" else libs[::-1]
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}", "", *OTHER_VALUE.strip("\n").splitlines(), "",
           f"index = {index}",
           f"new = other({writer.item('read', s.dtype, w)})",
           writer.item("write", s.dtype, w),
           f'print("{wname} wrote", new, "at", index, "and reads back", '
           f"{writer.item('read', s.dtype, w)})",
           f"got = {reader.item('read', s.dtype, r)}",
           f'print("{rname} reads", got, "there")',
           "if got != new:",
           f'    reproduced("{rname} does not read what {wname} wrote to the memory they share")',
           'not_reproduced("the write went through")')


def consumer_copy_keyword(s):
    """from_dlpack(x, copy=True) that hands back the producer's memory, or copy=False that hands
    back other memory: the two addresses, as the libraries report them."""
    ours, theirs = s.producer.expr("pointer", "x"), s.consumer.expr("pointer", "y")
    if not ours and s.protocol == "dlpack":
        # a producer without a pointer API: the address its own export of x gives
        s.need("dlpack")
        ours = '(lambda i: i["data"] + i["byte_offset"])(capsule_info(x.__dlpack__()))'
    if not ours or not theirs:
        raise NotImplementedError("the producer or the consumer has no pointer in its REPRO")
    asked = FROM_KEYWORDS[s.variant]
    if s.producer.get("align"):
        s.line(s.producer.get("align"))
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}",
           f"ours, theirs = {ours}, {theirs}",
           f'print(f"x at {{ours:#x}}, {s.consumer_name}\'s import ({asked}) at {{theirs:#x}}")')
    if s.variant == "from_copy":
        s.line("if ours == theirs:",
               f'    reproduced("{s.consumer_name} was asked for a copy and returned the '
               f'producer\'s memory")',
               'not_reproduced("a copy")')
    else:
        s.line("if ours != theirs:",
               f'    reproduced("{s.consumer_name} was asked not to copy and returned other '
               f'memory")',
               'not_reproduced("the same memory")')


def owner_released(s):
    """The producer's array outliving the exchange: a weak reference to it, taken before the
    export, still answers once every other name of the exchange is gone."""
    if s.consumer is None:
        raise NotImplementedError("interopcheck's own consumer has no Python spelling here")
    s.need("gc")
    s.line("import weakref", "",
           "watch = weakref.ref(x)",
           *s.exported(),
           f"y = {s.consume_expr()}",
           'for name in ("y", "obj", "exported", "x"):',
           "    globals().pop(name, None)",
           "gc.collect()",
           "if watch() is not None:",
           f'    reproduced("{s.producer_name}\'s array is still alive after the consumer let go: '
           'what the export kept holds it")',
           'not_reproduced("the array was freed")')


C_API_TABLE = """
class ExchangeAPI(ctypes.Structure):  # DLPackExchangeAPI: the header, five function pointers
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("prev_api", ctypes.c_void_p), ("allocator", ctypes.c_void_p),
                ("from_py_object", ctypes.c_void_p), ("to_py_object", ctypes.c_void_p),
                ("dltensor_from_py_object", ctypes.c_void_p),
                ("current_work_stream", ctypes.c_void_p)]


FROM_PY_OBJECT = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                                   ctypes.POINTER(ctypes.c_void_p))
"""


def c_api(s):
    """The DLPack C exchange API of type(x): its table, and what its export holds next to what
    __dlpack__ exports for the same array."""
    s.need("dlpack")
    s.line(*C_API_TABLE.strip("\n").splitlines(), "",
           "table = type(x).__dlpack_c_exchange_api__",
           "name = _name(table) if type(table).__name__ == 'PyCapsule' else None",
           'print("type(x).__dlpack_c_exchange_api__:", type(table).__name__, name)',
           'if name != b"dlpack_exchange_api":',
           '    reproduced("the table is not a PyCapsule named dlpack_exchange_api")',
           "api = ExchangeAPI.from_address(_pointer(table, name))",
           'print("table version:", (api.major, api.minor))')
    if s.f.get("rule") == "dlpack.c_api_table":
        s.line("if api.major != 1 or not all((api.allocator, api.from_py_object, "
               "api.to_py_object, api.current_work_stream)):",
               '    reproduced("a DLPack 1 consumer must not use this table (its major version, '
               'or a required function left NULL)")',
               'not_reproduced("the table is a version 1 table with its functions set")')
        return
    if s.f.get("rule") == "dlpack.c_api_stream":
        device = {"cpu": "1, 0", "cuda": "2, 0"}.get(s.device, "1, 0")
        s.line("STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32, "
               "ctypes.POINTER(ctypes.c_void_p))",
               "stream = ctypes.c_void_p()",
               f"rc = STREAM(api.current_work_stream)({device}, ctypes.byref(stream))",
               f'print("current_work_stream({device}) returned", rc, "stream", stream.value)',
               "if rc != 0:",
               '    reproduced("current_work_stream fails for the device of an array the table '
               'exports")',
               'not_reproduced("current_work_stream answers")')
        return
    s.line("out = ctypes.c_void_p()",
           "if FROM_PY_OBJECT(api.from_py_object)(x, ctypes.byref(out)) != 0:",
           '    not_reproduced("managed_tensor_from_py_object_no_sync refused the array")',
           "managed = DLManagedTensorVersioned.from_address(out.value)",
           "ours = managed.dl_tensor.data + managed.dl_tensor.byte_offset",
           "info = capsule_info(x.__dlpack__(max_version=(1, 3)))",
           'theirs = info["data"] + info["byte_offset"]',
           'print(f"the C API exports the first element at {ours:#x}, __dlpack__ at {theirs:#x}")',
           "ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(out.value)",
           "if ours != theirs:",
           '    reproduced("the C exchange API and __dlpack__ export different memory for one '
           'array")',
           'not_reproduced("both export the same memory")')


def timeout(s):
    s.line('print("importing; a hang stops here", flush=True)')
    _show_exchange(s)
    s.line('not_reproduced("the exchange finished")')


def consumer_refusal(s):
    s.line(*s.exported())
    s.line("try:",
           f"    y = {s.consume_expr()}",
           "except BufferError as e:",
           '    not_reproduced(f"refused with BufferError, as the spec asks: {e}")',
           "except Exception as e:",
           f'    reproduced(f"{s.consumer_name} refused with {{type(e).__name__}}, not BufferError: {{e}}")',
           'not_reproduced("the import succeeded")')


def round_trip(s):
    s.line(*s.exported())
    s.line("try:",
           f"    y = {s.consume_expr()}",
           "except Exception as e:",
           f'    reproduced(f"{s.consumer_name} cannot import its own {s.protocol} export: '
           '{type(e).__name__}: {e}")',
           'not_reproduced("the import succeeded")')


def producer_refusal(s):
    refusal = "BufferError"
    s.line("try:")
    if s.protocol == "dlpack_capsule":
        s.line(f"    capsule = {s.export_expr()}")
    elif s.protocol == "buffer":
        s.need("buffer")
        s.line(f"    info = get_buffer(x, {s.buffer_flags()})")
    else:
        s.line(f"    capsule = {s.dlpack_call()}")
    s.line(f"except {refusal} as e:",
           f'    not_reproduced(f"refused with {refusal}, as the spec asks: {{e}}")',
           "except Exception as e:",
           f'    reproduced(f"{s.producer_name} refused {_escape(s.request() or "the export")} '
           f'with {{type(e).__name__}}, not {refusal}: {{e}}")',
           'not_reproduced("it exported")')


def _escape(text):
    return text.replace("{", "{{").replace("}", "}}").replace('"', "'")


# What a producer of another era answers, in the legacy_only and versioned_only variants
_ERA_LINES = {
    "legacy_only": [
        "        newer = [k for k in (\"max_version\", \"dl_device\", \"copy\") if k in kwargs]",
        "        if newer:  # a producer older than max_version",
        "            raise TypeError(f\"__dlpack__() got an unexpected keyword argument "
        "'{newer[0]}'\")"],
    "versioned_only": [
        "        if \"max_version\" not in kwargs:  # a producer of versioned capsules only",
        "            raise BufferError(\"this producer exports versioned capsules only\")"],
}


def _spy(s):
    """A stand-in for the producer's array that records the consumer's __dlpack__ calls (and
    answers as a producer of another era would, in the variants that play one)."""
    s.line("calls = []",
           "",
           "",
           "class Spy:",
           '    """x, recording how the consumer asks for its capsule."""',
           "",
           "    def __dlpack_device__(self):",
           "        return x.__dlpack_device__()",
           "",
           "    def __dlpack__(self, **kwargs):",
           "        calls.append(kwargs)",
           *_ERA_LINES.get(s.variant, []),
           "        return x.__dlpack__(**kwargs)",
           "",
           "")


def consumer_max_version(s):
    _spy(s)
    s.line(f"y = {s.consume_expr('Spy()')}",
           'print("__dlpack__ calls:", calls)',
           'if calls and not any("max_version" in kw for kw in calls):',
           f'    reproduced("{s.consumer_name} never passes max_version, so no producer may answer '
           'with a versioned capsule")',
           'not_reproduced("max_version was passed")')


def consumer_retry(s):
    _spy(s)
    s.line("try:",
           f"    y = {s.consume_expr('Spy()')}",
           "except TypeError as e:",
           '    print("__dlpack__ calls:", calls)',
           f'    reproduced(f"{s.consumer_name} did not call __dlpack__() again without max_version '
           'after the producer\'s TypeError: {e}")',
           'print("__dlpack__ calls:", calls)',
           'not_reproduced("the import succeeded")')


def _capsule_holder(name, why):
    """Lines of a class `name` whose __dlpack__ hands out the script's `capsule` (a CPU export),
    with blank lines around it."""
    return ["", "", f"class {name}:  # {why}", "    def __dlpack__(self, **kwargs):",
            "        return capsule", "", "    def __dlpack_device__(self):",
            "        return (1, 0)", "", ""]


def consumer_used_capsule(s):
    """The producer's capsule, renamed used_* as a consumer renames what it took, handed to the
    consumer again: it must refuse it (another consumer owns the tensor)."""
    s.line("import ctypes",
           "try:",
           "    capsule = x.__dlpack__(max_version=(1, 3))",
           "except TypeError:  # a producer older than max_version",
           "    capsule = x.__dlpack__()",
           "get_name = ctypes.pythonapi.PyCapsule_GetName",
           "get_name.argtypes, get_name.restype = [ctypes.py_object], ctypes.c_char_p",
           "set_name = ctypes.pythonapi.PyCapsule_SetName",
           "set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]",
           "used = b'used_' + get_name(capsule)",
           "set_name(capsule, used)  # what a consumer does once it took the tensor",
           *_capsule_holder("Exported", "hands the consumer the capsule a second time"),
           "try:",
           f"    y = {s.consume_expr('Exported()')}",
           "except Exception as e:",
           f'    not_reproduced(f"{s.consumer_name} refused the used capsule: '
           '{type(e).__name__}: {e}")',
           f'reproduced(f"{s.consumer_name} imported a capsule named {{used.decode()}}, which '
           'another consumer owns")')


def consumer_capsule_kind(s):
    _spy(s)
    s.need("dlpack")
    s.line("print(\"the producer answers max_version with\", capsule_struct(x.__dlpack__(max_version=(1, 3)))[0])",
           "try:",
           f"    y = {s.consume_expr('Spy()')}",
           "except Exception as e:",
           '    if "PyCapsule" in str(e):',
           f'        reproduced(f"{s.consumer_name} looked the legacy capsule up under the versioned '
           'name: {type(e).__name__}: {e}")',
           "    raise",
           'not_reproduced("the import succeeded")')


def capi_exception(s):
    s.line("",
           "",
           "class ReadOnlyBytes:",
           '    """A read-only exporter written in Python (PEP 688): it refuses writable requests."""',
           "",
           "    def __buffer__(self, flags):",
           "        if flags & 1:  # PyBUF_WRITABLE",
           '            raise BufferError("read-only: no writable buffer")',
           f"        return memoryview(bytes({max(1, 8)}))",
           "",
           "",
           "# The same read-only bytes from a C exporter, whose slot never looks at the",
           "# exception state: if this fails too, the consumer simply refuses read-only memory.",
           "try:",
           f"    control = {s.consume_expr('bytes(8)')}",
           "except Exception as e:",
           f'    not_reproduced(f"{s.consumer_name} refuses read-only buffers outright: {{e}}")',
           "try:",
           f"    y = {s.consume_expr('ReadOnlyBytes()')}",
           "except Exception as e:",
           f'    reproduced(f"{s.consumer_name} imports read-only bytes, but not from a Python '
           'exporter: it asked again while the exporter\'s BufferError was still set, so the '
           'exporter\'s second answer failed: {type(e).__name__}: {e}")',
           'not_reproduced("the read-only buffer was imported")')


def deleter_once(s):
    s.need("dlpack", "deleter", "gc")
    s.line("",
           "",
           "class Counted:",
           '    """x, with the deleter of every capsule it hands out counting its calls."""',
           "",
           "    def __dlpack_device__(self):",
           "        return x.__dlpack_device__()",
           "",
           "    def __dlpack__(self, **kwargs):",
           "        return counting_deleter(x.__dlpack__(**kwargs))",
           "",
           "",
           f"y = {s.consume_expr('Counted()')}",
           "del y",
           "gc.collect()",
           'print("deleter calls after the import was released:", len(deleter_calls))',
           "if len(deleter_calls) == 0:",
           f'    reproduced("{s.consumer_name} took the capsule but never called its deleter: the '
           'tensor leaks")',
           "if len(deleter_calls) > 1:",
           f'    reproduced(f"{s.consumer_name} called the deleter {{len(deleter_calls)}} times")',
           'not_reproduced("the deleter ran exactly once")')


def device_tuple(s):
    s.line("device = x.__dlpack_device__()",
           'print("__dlpack_device__() =", repr(device))',
           "if not (isinstance(device, tuple) and len(device) == 2 and "
           "all(isinstance(v, int) for v in device)):",
           '    reproduced(f"__dlpack_device__() returned {device!r}, not a 2-tuple of ints")',
           'not_reproduced("a 2-tuple of ints")')


def capsule_device(s):
    """A capsule's device against __dlpack_device__() and DLPack's rules for it (a known type, an
    id >= 0, 0 for host memory): both, side by side."""
    s.need("dlpack")
    s.line("device = tuple(int(v) for v in x.__dlpack_device__())",
           "info = capsule_info(x.__dlpack__(max_version=(1, 0)))",
           "kind, ordinal = info['device']",
           'print("__dlpack_device__():", device)',
           'print("the capsule\'s device:", info["device"])',
           'if (kind, ordinal) != device:',
           f'    reproduced(f"{s.producer_name}\'s capsule says device {{info[\'device\']}}, its '
           '__dlpack_device__() {device}")',
           "if not (1 <= kind <= 4 or 7 <= kind <= 18) or ordinal < 0:",
           '    reproduced(f"the capsule\'s device {(kind, ordinal)} is no DLPack device")',
           "if kind in (1, 3, 11, 13) and ordinal != 0:  # CPU, CUDA host, ROCm host, managed",
           '    reproduced(f"the capsule names host memory with device_id {ordinal}; DLPack has 0")',
           'not_reproduced("the capsule\'s device is a DLPack device, the one __dlpack_device__() '
           'names")')


def dlpack_request_flags(s):
    s.need("dlpack")
    call = s.dlpack_call()
    s.line(f"capsule = {call}",
           "info = capsule_info(capsule)",
           'print("the export:", info)')
    rule = s.f.get("rule")
    if rule == "dlpack.cpu_stream":
        s.line(f'reproduced("{_escape(call)} exported from a CPU array instead of raising")')
        return
    wants_copy = "copy=True" in call
    if wants_copy:
        s.line('if info.get("flags", 0) & 2 == 0:',
               f'    reproduced("{_escape(call)} answered without DLPACK_FLAG_BITMASK_IS_COPIED '
               '(a legacy capsule cannot carry it)" if "flags" not in info else '
               f'"{_escape(call)} answered without DLPACK_FLAG_BITMASK_IS_COPIED")',
               'not_reproduced("IS_COPIED is set")')
    else:
        s.line('if info.get("flags", 0) & 2:',
               f'    reproduced("{_escape(call)} set DLPACK_FLAG_BITMASK_IS_COPIED")',
               'not_reproduced("IS_COPIED is clear")')


def buffer_fields(s):
    s.need("buffer")
    flags = s.buffer_flags()
    rule = s.f.get("rule")
    s.line(f"flags = {flags}",
           "info = get_buffer(x, flags)",
           'print("the buffer:", {k: v for k, v in info.items() if k != "bytes"})',
           "wants_format, wants_shape = bool(flags & 0x4), (flags & 0x8) == 0x8",
           "wants_strides, wants_indirect = (flags & 0x18) == 0x18, (flags & 0x118) == 0x118")
    if rule == "buffer.format_request":
        s.line('if wants_format != (info["format"] is not None):',
               '    reproduced(f"format is {info[\'format\']!r} for a request that '
               '{\'asks\' if wants_format else \'does not ask\'} for it")',
               'not_reproduced("format is filled exactly when asked for")')
    elif rule == "buffer.scalar":
        s.line('if info["ndim"] == 0 and (info["shape"] is not None or info["strides"] is not None',
               '                          or info["suboffsets"]):',
               '    reproduced("a 0-d buffer came with shape or strides")',
               'not_reproduced("a 0-d buffer without shape and strides")')
    elif rule == "buffer.shape_strides":
        s.line("bad = []",
               'if wants_shape and info["ndim"] > 0 and not info["shape"]:',
               '    bad.append("shape is NULL though asked for")',
               'if not wants_shape and info["shape"] is not None:',
               '    bad.append("shape is set though not asked for")',
               'if wants_strides and info["ndim"] > 0 and not info["strides"]:',
               '    bad.append("strides is NULL though asked for")',
               'if not wants_strides and info["strides"] is not None:',
               '    bad.append("strides are set though not asked for")',
               'if info["suboffsets"] and not wants_indirect:',
               '    bad.append("suboffsets are set though not asked for")',
               "if bad:",
               '    reproduced("; ".join(bad))',
               'not_reproduced("shape and strides follow the request")')
    elif rule == "buffer.writable":
        s.line('if flags & 1 and info["readonly"]:',
               '    reproduced("a writable buffer was asked for and a read-only one returned")',
               'not_reproduced("writable as asked")')
    else:  # buffer.contiguous
        s.need("struct")
        s.line(*s.expected_lines())
        s.line('if "bytes" in info:',
               "    # the request has no strides: the bytes must be the elements in C order",
               f"    got = _elements(info[\"bytes\"], {_struct_format(s.dtype)!r})",
               '    print("read in C order:", got[:%d])' % MAX_LIST,
               f'    print("expected:      ", _flatten(expected)[:{MAX_LIST}])',
               "    if got != _flatten(expected):",
               '        reproduced("the buffer is not the array in C order, though the request has no '
               'strides")',
               '    not_reproduced("the bytes are the array in C order")',
               'strides, shape, itemsize = info["strides"], info["shape"], info["itemsize"]',
               "c_strides, step = [], itemsize",
               "for n in reversed(shape):",
               "    c_strides.insert(0, step)",
               "    step *= max(n, 1)",
               "f_strides, step = [], itemsize",
               "for n in shape:",
               "    f_strides.append(step)",
               "    step *= max(n, 1)",
               "def same(a, b):",
               "    return all(s1 == s2 for s1, s2, n in zip(a, b, shape) if n > 1)",
               "c_ok, f_ok = same(strides, c_strides), same(strides, f_strides)",
               'want = "C" if flags & 0x20 else "F" if flags & 0x40 else "any"',
               'if (want == "C" and not c_ok) or (want == "F" and not f_ok) or (want == "any" and not (c_ok or f_ok)):',
               '    reproduced(f"a {want}-contiguous buffer was asked for, and strides {strides} came back")',
               'not_reproduced("contiguous as asked")')


def _struct_format(dtype):
    # the kit's PEP 3118 formats are struct's too; raw bytes for the dtypes without one
    return _probekit.FORMATS.get(dtype, "B")


STRUCT_HELPER = '''
import struct


def _elements(data, code):
    return list(struct.unpack(f"{len(data) // struct.calcsize(code)}{code}", data))


def _flatten(value):
    return [v for item in value for v in _flatten(item)] if isinstance(value, list) else [value]
'''


def array_result(s):
    """__array__ faults: what the producer's __array__ returned."""
    rule = s.f.get("rule")
    m = re.fullmatch(r"__array__\((.*)\)", s.request())
    args = m.group(1) if m and re.fullmatch(r"[\w=, ]*", m.group(1)) else ""
    s.line(f"r = x.__array__({args})",
           'print("__array__ returned", type(r), getattr(r, "dtype", None), getattr(r, "shape", None))')
    if rule == "array.returns_ndarray":
        s.line('if type(r).__name__ != "ndarray" or type(r).__module__ != "numpy":',
               '    reproduced(f"__array__ returned a {type(r).__module__}.{type(r).__name__}, not a '
               'numpy.ndarray")',
               'not_reproduced("a numpy.ndarray")')
    elif rule == "array.readonly":
        first = s.view.flat()[0] if s.view.flat() else 0
        s.line(f"before = {s.producer.expr('tolist', 'x')}",
               'print("the result is writable:", r.flags.writeable, "and shares memory:", not r.flags.owndata)',
               "if r.flags.writeable and not r.flags.owndata:",
               "    r.flat[0] = r.flat[1] if r.size > 1 else not r.flat[0]",
               f"    after = {s.producer.expr('tolist', 'x')}",
               '    print("x before:", before, "after writing to the result:", after)',
               "    if after != before:",
               f'        reproduced("writing to __array__\'s result changed the {s.producer_name} array, '
               'which is read-only")',
               '    reproduced("__array__ returned a writable view of a read-only array")',
               'not_reproduced("the result is read-only or a copy")')
        _ = first
    elif rule in ("array.copy_true", "array.no_copy"):
        pointer = s.producer.expr("pointer", "x")
        if pointer:
            s.line(f"ours = {pointer}")
        else:
            s.need("buffer")
            s.line('ours = get_buffer(x, PyBUF["RECORDS_RO"])["address"]')
        s.line(
               "theirs = r.__array_interface__[\"data\"][0]",
               'print(f"x at {ours:#x}, the result at {theirs:#x}")')
        if rule == "array.copy_true":
            s.line("if ours == theirs:",
                   '    reproduced("__array__(copy=True) returned the producer\'s own memory")',
                   'not_reproduced("a copy")')
        else:
            s.line("if ours != theirs:",
                   '    reproduced("__array__(copy=False) returned a copy instead of raising ValueError")',
                   'not_reproduced("the same memory")')
    else:  # exchange.dtype on the export: the result's dtype
        s.line(f'if str(r.dtype) != "{s.dtype}":',
               f'    reproduced(f"__array__ of {_article(s.dtype)} {s.dtype} array returned {{r.dtype}}")',
               f'not_reproduced("the result is {s.dtype}")')


def arrow_stream(s):
    """An Arrow stream that cannot be read to its end: pyarrow, a third library, reads it."""
    s.line("import pyarrow as pa",
           f"obj = {s.export_expr()}",
           "try:",
           "    seen = pa.chunked_array(obj)  # get_schema, then get_next to the end",
           "except Exception as exc:",
           f'    reproduced(f"{s.producer_name}\'s Arrow stream could not be read: '
           '{type(exc).__name__}: {exc}")',
           'print("read:", seen.to_pylist())',
           'not_reproduced("the stream was read to its end")')


# The sizes the array interface's typestr kinds can have (binary16/32/64 and x86's long double
# layouts for floats), as interopcheck checks them
_TYPESTR_SIZES = "{'b': (1,), 'i': (1, 2, 4, 8), 'u': (1, 2, 4, 8), 'f': (2, 4, 8, 10, 12, 16), 'c': (8, 16, 20, 24, 32)}"


def element_type(s):
    """An export whose element type has a kind with a size no such type has (a typestr "<f1",
    a PyArrayInterface typekind 'f' of 1 byte): what the export says, next to the sizes."""
    s.line(f"SIZES = {_TYPESTR_SIZES}")
    if s.protocol == "array_interface":
        s.line("typestr = x.__array_interface__['typestr']",
               "kind, size = typestr[1], int(typestr[2:])",
               'print("__array_interface__ typestr:", typestr)')
    elif s.protocol == "array_struct":
        s.line("import ctypes",
               "",
               "",
               "class PyArrayInterface(ctypes.Structure):",
               "    _fields_ = [('two', ctypes.c_int), ('nd', ctypes.c_int), "
               "('typekind', ctypes.c_char), ('itemsize', ctypes.c_int)]",
               "",
               "",
               "capsule = x.__array_struct__",
               "get_pointer = ctypes.pythonapi.PyCapsule_GetPointer",
               "get_pointer.argtypes, get_pointer.restype = [ctypes.py_object, ctypes.c_char_p], "
               "ctypes.c_void_p",
               "struct = PyArrayInterface.from_address(get_pointer(capsule, None))",
               "kind, size = struct.typekind.decode(), struct.itemsize",
               'print("__array_struct__ typekind:", kind, "itemsize:", size)')
    else:
        raise NotImplementedError(f"no element-type reproducer for {s.protocol}")
    s.line("if kind in SIZES and size not in SIZES[kind]:",
           f'    reproduced(f"{s.producer_name} exports elements of kind {{kind!r}} with {{size}} '
           'bytes, a size no such type has")',
           'not_reproduced("the element type is one the protocol can name")')


def arrow_nulls(s):
    """Nulls that do not survive an Arrow exchange. The producer's export read by pyarrow, a
    third library: which elements are null, and its null_count; the consumer's import read by
    its own library: which elements are null."""
    if s.protocol not in ("arrow", "arrow_device") or s.variant != "nulls":
        raise NotImplementedError(f"no nulls reproducer for {s.protocol} {s.variant or 'cases'}")
    s.line(*s.expected_lines(), "want = [v is None for v in expected]")
    if s.f.get("side") == "producer":
        s.line("import pyarrow as pa",
               f"seen = pa.array({s.export_expr()})  # pyarrow reads the export",
               "got = [v is None for v in seen.to_pylist()]",
               'print("null in the array: ", want)',
               'print("null in its export:", got, "null_count:", seen.null_count)',
               "if got != want:",
               f'    reproduced("{s.producer_name}\'s Arrow export marks other elements null '
               'than the array")',
               "if seen.null_count != sum(got):",
               f'    reproduced(f"{s.producer_name}\'s Arrow export says null_count '
               '{seen.null_count}, its validity bitmap marks {sum(got)} elements null")',
               'not_reproduced("the export marks the array\'s nulls")')
        return
    y = "y"
    s.line(*s.exported(),
           f"y = {s.consume_expr()}",
           f"got = [v is None for v in {s.consumer.expr('tolist', y)}]",
           'print("null in the array: ", want)',
           'print("null in its import:", got)',
           "if got != want:",
           f'    reproduced("{s.consumer_name}\'s import marks other elements null than the '
           'export")',
           'not_reproduced("the import keeps the nulls")')


def relay(s):
    """A consumer that hands its import on over DLPack with other values than it imported: what
    it hands on, read by NumPy (a third library), next to the array's values."""
    if s.consumer.export("dlpack") != "x":
        raise NotImplementedError(f"{s.consumer_name}'s DLPack export is no plain __dlpack__")
    s.line("import numpy as np", *s.expected_lines(), *s.exported(),
           f"y = {s.consume_expr()}",
           "seen = np.from_dlpack(y).tolist()  # what it hands on over DLPack",
           'print("the array holds:  ", expected)',
           'print("its relay holds:  ", seen)',
           "if seen != expected:",
           f'    reproduced("{s.consumer_name} hands its {s.protocol} import on over DLPack '
           'with other values")',
           'not_reproduced("the relay holds the array\'s values")')


def requested_schema(s):
    """A producer that refuses its own schema as requested_schema: the schema comes from its
    export made without one (or __arrow_c_schema__ for a stream), and is asked for."""
    method = {"arrow": "__arrow_c_array__", "arrow_stream": "__arrow_c_stream__"}.get(s.protocol)
    if not method:
        raise NotImplementedError(f"no requested_schema reproducer for {s.protocol}")
    s.line(f"obj = {s.export_expr()}")
    if s.protocol == "arrow":
        s.line(f"schema = obj.{method}()[0]  # the export's own schema")
    else:
        s.line("if not hasattr(obj, '__arrow_c_schema__'):",
               '    not_reproduced("the stream has no __arrow_c_schema__ to take its schema '
               'from")',
               "schema = obj.__arrow_c_schema__()  # the stream's own schema")
    s.line("try:",
           f"    obj.{method}(requested_schema=schema)",
           "except Exception as exc:",
           f'    reproduced(f"{s.producer_name} refused its own schema as requested_schema: '
           '{type(exc).__name__}: {exc}")',
           'not_reproduced("the export was made in the requested schema or its own")')


def export_contents(s):
    """A DLPack export that holds other values than the producer's array: the export read by
    NumPy, a third library, next to the values the array holds; an Arrow stream read by
    pyarrow."""
    if s.protocol == "arrow_stream" and s.device == "cpu":
        s.line("import pyarrow as pa", *s.expected_lines(),
               f"seen = pa.chunked_array({s.export_expr()}).to_pylist()")
        s.line('print("the array holds:", expected)',
               'print("its stream holds:", seen)',
               "if seen != expected:",
               f'    reproduced("{s.producer_name}\'s Arrow stream holds other values than '
               'the array")',
               'not_reproduced("the stream holds the array\'s values")')
        return
    if s.protocol not in ("dlpack", "dlpack_capsule") or s.device != "cpu":
        raise NotImplementedError(f"no reproducer reads a {s.protocol} export on {s.device} yet")
    s.line("import numpy as np", *s.expected_lines())
    if s.protocol == "dlpack":
        s.line("seen = np.from_dlpack(x).tolist()")
    else:
        s.line(f"capsule = {s.export_expr()}",
               *_capsule_holder("Holder", "hands NumPy the capsule to_dlpack made"),
               "seen = np.from_dlpack(Holder()).tolist()")
    s.line('print("the array holds:", expected)',
           'print("its export holds:", seen)',
           "if seen != expected:",
           f'    reproduced("{s.producer_name}\'s {s.protocol} export holds other values than '
           'the array")',
           'not_reproduced("the export holds the array\'s values")')


# DLPack's (type code, bits) of each interface dtype (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
# kDLComplex 5, kDLBool 6, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12): what an export must say
DLPACK_DTYPES = {
    "bool": (6, 8), "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "bfloat16": (4, 16), "float32": (2, 32), "float64": (2, 64),
    "complex64": (5, 64), "complex128": (5, 128), "float8_e4m3fn": (10, 8),
    "float8_e5m2": (12, 8), "int4": (0, 4), "uint4": (1, 4),
}


def export_dtype(s):
    """A DLPack export whose dtype is not the array's: the capsule's (code, bits) read with
    ctypes, next to what DLPack calls the array's dtype."""
    if s.protocol not in ("dlpack", "dlpack_capsule"):
        raise NotImplementedError(f"no reproducer reads the dtype of a {s.protocol} export yet")
    s.need("dlpack")
    capsule = ("x.__dlpack__(max_version=(1, 0))" if s.protocol == "dlpack"
               else s.export_expr())
    code, bits = DLPACK_DTYPES[s.dtype]
    s.line(f"info = capsule_info({capsule})",
           'print("the export says (code, bits, lanes):", info["dtype"])',
           f"if info[\"dtype\"][:2] != ({code}, {bits}):",
           f'    reproduced(f"{s.producer_name} exports {_article(s.dtype)} {s.dtype} array as DLPack dtype '
           f'{{info[\'dtype\'][:2]}}, not ({code}, {bits})")',
           f'not_reproduced("the export says ({code}, {bits}), DLPack\'s {s.dtype}")')


def import_property(s):
    """A fault of the consumer's import: its contents, dtype, shape or where it lives."""
    check, rule = s.f.get("check"), s.f.get("rule")
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}")
    if check == "dtype" and rule == "exchange.dtype_named":
        s.line("try:",
               "    print(y.dtype)",
               "except Exception as e:",
               f'    reproduced(f"{s.consumer_name} imported {_article(s.dtype)} {s.dtype} array whose dtype it cannot '
               'name: {type(e).__name__}: {e}")',
               'not_reproduced("the dtype has a name")')
    elif check == "dtype":
        s.line(f"got = {s.consumer.expr('dtype', 'y')}",
               f'print("{s.consumer_name} imported {_article(s.dtype)} {s.dtype} array as", got)',
               f'if got.rsplit(".", 1)[-1].rstrip("_") != "{s.dtype}":',
               f'    reproduced(f"{s.consumer_name} imported {_article(s.dtype)} {s.dtype} array as {{got}}")',
               f'not_reproduced("{s.dtype} kept")')
    elif check == "shape":
        s.line(f"got = {s.consumer.expr('shape', 'y')}",
               f"if tuple(got) != {tuple(s.view.shape)!r}:",
               f'    reproduced(f"{s.consumer_name} imported shape {tuple(s.view.shape)} as {{got}}")',
               'not_reproduced("the shape survived")')
    else:  # contents
        s.line(*s.expected_lines())
        s.line(f"got = {s.consumer.expr('tolist', 'y')}",
               f'print("{s.consumer_name} reads:", got)',
               'print("expected:", expected)',
               "if got != expected:",
               f'    reproduced("{_escape(_one_line(s.f.get("note", "the import holds other values"), 200))}")',
               'not_reproduced("the import holds the expected values")')


def readonly_import(s):
    if s.consumer.get("readonly") is None:
        raise NotImplementedError(f"{s.consumer_name} cannot tell read-only in its REPRO")
    s.line(*s.exported())
    s.line(f"y = {s.consume_expr()}",
           f"readonly = {s.consumer.expr('readonly', 'y')}",
           'print("the import is read-only:", readonly)',
           "if not readonly:",
           f'    reproduced("{s.consumer_name}\'s import of read-only memory is writable")',
           'not_reproduced("read-only")')


RULES = {
    "exchange.crash": crash,
    "exchange.timeout": timeout,
    "exchange.round_trip": round_trip,
    "dlpack.consumer_max_version": consumer_max_version,
    "dlpack.consumer_retry": consumer_retry,
    "dlpack.consumer_capsule_kind": consumer_capsule_kind,
    "dlpack.consumer_used_capsule": consumer_used_capsule,
    "python.capi_exception": capi_exception,
    "dlpack.deleter_once": deleter_once,
    "exchange.compute": compute,
    "exchange.compute_error": compute,
    "exchange.write_through": write_through,
    "exchange.consumer_copy": consumer_copy_keyword,
    "exchange.owner_released": owner_released,
    "dlpack.c_api_table": c_api,
    "dlpack.c_api_agrees": c_api,
    "dlpack.c_api_stream": c_api,
    "exchange.consumer_no_copy": consumer_copy_keyword,
    "dlpack.device_tuple": device_tuple,
    "dlpack.device_match": capsule_device,
    "dlpack.device": capsule_device,
    "dlpack.copy_flag": dlpack_request_flags,
    "dlpack.cpu_stream": dlpack_request_flags,
    "buffer.format_request": buffer_fields,
    "buffer.scalar": buffer_fields,
    "buffer.shape_strides": buffer_fields,
    "buffer.writable": buffer_fields,
    "buffer.contiguous": buffer_fields,
    "array.returns_ndarray": array_result,
    "array.readonly": array_result,
    "array.copy_true": array_result,
    "array.no_copy": array_result,
    "arrow.stream": arrow_stream,
    "array_interface.typestr": element_type,
    "array_struct.struct": element_type,
    "arrow.requested_schema": requested_schema,
    "arrow.nulls": arrow_nulls,
    "exchange.relay": relay,
}


def _choose(s):
    f = s.f
    rule, side, check = f.get("rule"), f.get("side"), f.get("check")
    if f.get("outcome") in ("crash", "timeout"):
        return crash if f["outcome"] == "crash" else timeout
    if rule == "exchange.refusal":
        return consumer_refusal if side == "consumer" else producer_refusal
    if rule in RULES:
        return RULES[rule]
    if rule == "arrow.buffers" and s.variant == "nulls" and side == "producer":
        return arrow_nulls  # a null_count that disagrees with the bitmap
    if s.protocol == "array" and side == "producer":
        return array_result
    if side == "consumer" and check in ("contents", "dtype", "shape"):
        return import_property
    if side == "producer" and check == "contents":
        return export_contents
    if side == "producer" and check == "dtype" and rule == "exchange.dtype":
        return export_dtype
    if side == "consumer" and check == "readonly":
        return readonly_import
    raise NotImplementedError(f"no reproducer is written for {rule} ({side}, {check}) yet")


def generate(failure_json, ops, base_len, producer, consumer, valid=None):
    """The reproducer of one failure; `valid` is the nulls variants' valid= of build()."""
    failure = json.loads(failure_json)
    s = Script(failure, ops, base_len, producer, consumer, valid)
    _choose(s)(s)
    text = s.render()
    if "struct" in s.helpers or "_elements(" in text:
        text = text.replace(VERDICT.strip("\n"), VERDICT.strip("\n") + "\n\n" + STRUCT_HELPER.strip("\n"), 1)
    return text
