"""pydlpack (import name `dlpack`): wraps buffer, __array_interface__ and DLPack objects as
DLPack producers (dlpack.asdlpack).

pydlpack has no arrays or array operations of its own: build() keeps the bytes in a bytearray,
lays each layout out with plain stride arithmetic, and hands that view to dlpack.asdlpack through
a minimal __array_interface__, so the DLTensor pydlpack makes carries the layout itself.
Cannot: make versioned capsules (it always exports the legacy "dltensor" and its __dlpack__ takes
no max_version), so it cannot say read-only; bfloat16 (no typestr for it); import raw capsules.
Its DLPackObject does not own its source (a module-level cache does, and drops it once the first
consumer releases the capsule), so the probe keeps the source alive on the object.
"""

import ctypes
import sys

import _probekit

NAME = "pydlpack"

dlpack = None


def _repro_build(dtype, ops, readonly):
    # build()'s steps from a list: the bytes in storage the script allocates (64-byte aligned,
    # as build()'s), the layout as stride arithmetic, and that view handed to dlpack.asdlpack
    # through a minimal __array_interface__
    if readonly:
        raise NotImplementedError("pydlpack cannot make a read-only array")
    itemsize = _probekit.ITEMSIZE[dtype]
    if dtype.startswith("complex"):
        part = "f" if itemsize == 8 else "d"
        pack = (
            f'struct.pack(f"{{2 * len(values)}}{part}", '
            "*[p for v in values for p in (v.real, v.imag)])"
        )
    else:
        pack = f'struct.pack(f"{{len(values)}}{_probekit.FORMATS[dtype]}", *values)'
    lines = [
        f"data = {pack}",
        "block = ctypes.create_string_buffer(len(data) + 64)",
        "address = ctypes.addressof(block) + -ctypes.addressof(block) % 64",
        "ctypes.memmove(address, data, len(data))",
        "# the layout's view of the storage: shape, and strides and offset in bytes",
        f"shape, strides, offset = [len(values)], [{itemsize}], 0",
    ]
    ndim = 1
    for name, arg in ops:
        if name == "reshape":
            lines.append(f"shape, strides = {list(arg)}, {_probekit.c_strides(arg, itemsize)}")
            ndim = len(arg)
        elif name == "permute":
            perm = tuple(arg)
            lines.append(
                f"shape, strides = [shape[p] for p in {perm}], [strides[p] for p in {perm}]"
            )
        elif name == "slice":
            for dim, (start, stop, step) in enumerate(arg):
                lines += [
                    f"start, stop, step = slice({start}, {stop}, {step}).indices(shape[{dim}])",
                    f"offset += start * strides[{dim}]",
                    f"shape[{dim}] = len(range(start, stop, step))",
                    f"strides[{dim}] *= step",
                ]
        else:  # broadcast: a dimension of 1 that grows gets stride 0
            lead = len(arg) - ndim
            zeros = f"[0] * {lead} + " if lead else ""
            lines += [
                f"strides = {zeros}[0 if old == 1 and new != 1 else s",
                f"           for new, old, s in zip({list(arg)[lead:]}, shape, strides)]",
                f"shape = {list(arg)}",
            ]
            ndim = len(arg)
    lines += [
        "",
        "",
        "class Source:",
        '    """The view, offered to pydlpack as __array_interface__ (version 3)."""',
        "",
        f'    __array_interface__ = {{"version": 3, "shape": tuple(shape), '
        f'"typestr": "{_typestr(dtype)}",',
        '                           "data": (address + offset, False), "strides": tuple(strides)}',
        "",
        "",
        "source = Source()  # kept alive here: pydlpack's object does not own it",
        "x = dlpack.asdlpack(source)",
    ]
    return lines


# How a reproducer spells pydlpack (probes/README.md, "Reproducers"). Its object has no
# element access: dlpack.todict reads dtype and shape from the DLTensor of a capsule it hands
# out, and there is no `tolist`, so a wrong-contents import by pydlpack has no reproducer.
# No read-only arrays.
REPRO = {
    "import": "import ctypes\nimport struct\nimport dlpack",
    "ns": "dlpack",
    "build": _repro_build,
    "consume": {
        "dlpack": "dlpack.asdlpack({obj})",
        "array_interface": "dlpack.asdlpack({obj})",
        "buffer": "dlpack.asdlpack({obj})",
    },
    "dtype": '(lambda t: "bool" if t["code"] == "DLBool" else t["code"][2:].lower() + '
    'str(t["bits"]))(dlpack.todict({y}.__dlpack__())["dl_tensor"]["dtype"])',
    "shape": 'tuple(dlpack.todict({y}.__dlpack__())["dl_tensor"]["shape"] or ())',
}

# An interface dtype's kind is its name without the bits: "uint" of "uint16", "bool" of "bool"
def _kind(dtype):
    return dtype.rstrip("0123456789")


# the array interface's typestr kinds (there is none for bfloat16)
_KINDS = {"bool": "b", "int": "i", "uint": "u", "float": "f", "complex": "c"}

# DLPack's type codes (dlpack.h: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool), and
# the interface name of each (code, bits)
_DL_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "complex": 5, "bool": 6}
_FROM_DL = {(_DL_CODES[_kind(d)], 8 * size): d for d, size in _probekit.ITEMSIZE.items()
            if d not in _probekit.FLOAT8_DTYPES and d not in _probekit.INT4_DTYPES}


def load():
    global dlpack
    import dlpack as _dlpack

    dlpack = _dlpack
    return _probekit.load_info(
        dlpack.__version__,
        missing={
            "bfloat16": "pydlpack reads dtypes from a typestr or buffer format: none has bfloat16",
            "unit_dims_odd": "a DLPack tensor's " + _probekit.UNIT_STRIDE_NOTE,
        },
        exports=_probekit.exports("dlpack"),
        # asdlpack exists to expose the object's memory without copying, whatever protocol
        # offers it
        imports=_probekit.imports(
            dict.fromkeys(("dlpack", "array_interface", "buffer"), "dlpack.asdlpack(obj)"),
            zero_copy=True, readonly=False),
    )


class _Interface:
    """Offers one strided view of `owner`'s memory as __array_interface__ (version 3)."""

    def __init__(self, owner, address, view, typestr, readonly):
        self._owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": view.shape,
            "typestr": typestr,
            "data": (address + view.offset, readonly),
            "strides": view.strides,
        }


def _typestr(dtype):
    kind = _KINDS[_kind(dtype)]
    size = _probekit.ITEMSIZE[dtype]
    order = "|" if size == 1 else ("<" if sys.byteorder == "little" else ">")
    return f"{order}{kind}{size}"


def build(data, dtype, ops, readonly=False):
    itemsize = _probekit.ITEMSIZE[dtype]
    storage = _probekit.aligned_storage(data)
    base = _probekit.Strided([len(data) // itemsize], [itemsize])
    view = _probekit.apply_ops(base, ops, broadcast=_probekit.Strided.broadcast)
    source = _Interface(storage, ctypes.addressof(storage), view, _typestr(dtype), readonly)
    x = dlpack.asdlpack(source)
    x._probe_source = source
    return x


def describe(x):
    # pydlpack's array is its DLManagedTensor ctypes structure; reading it is its own API
    # (no capsule is made). The cache check catches a struct that pydlpack already freed.
    pointer = x.impl._managed_pointer
    if pointer not in dlpack.MemoryManager.cache:
        raise RuntimeError("pydlpack freed this object's DLManagedTensor when a consumer let go")
    t = ctypes.cast(pointer, ctypes.POINTER(x.impl.impl_cls)).contents.dl_tensor
    code = (t.dtype.code.value, t.dtype.bits)
    dtype = _FROM_DL.get(code, f"dlpack{code}")
    itemsize = t.dtype.bits // 8
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = None if not t.strides else [t.strides[i] * itemsize for i in range(t.ndim)]
    if t.device.device_type.value != 1:
        raise ValueError(f"not a CPU tensor: device type {t.device.device_type.value}")
    return _probekit.pointer_description((t.data or 0) + t.byte_offset, shape, strides, dtype, None)


def consume(obj, protocol, dtype):
    return dlpack.asdlpack(obj)
