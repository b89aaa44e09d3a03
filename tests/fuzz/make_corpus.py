"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/NAME/) from real exports.

    .venv/bin/python tests/fuzz/make_corpus.py

NumPy (and the interpreter's own bytes and memoryview) export arrays of several dtypes and
layouts; their __array_interface__ dicts, __array_struct__ structs, DLPack capsules and
buffers, and pyarrow's Arrow C data interface exports, are read here and written in each harness's input format (see the layout comment at
the top of each tests/fuzz/fuzz_NAME.c). The CUDA Array Interface seeds are NumPy's dicts
respelled as CuPy and Numba write theirs (version 3, a stream, a made-up device pointer), as
no GPU library is needed for them. Typestrs and formats are the ones these exports use, plus
the rarer spellings the parsers accept. The report and expectations seeds are cut-down files of
real runs and are kept as they are (docs/fuzzing.md); this script leaves them alone.
"""
import ctypes
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

# The arrays: (name, array), NumPy's layouts of the tester's matrix.
def arrays():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    yield "f4_contiguous", base
    yield "f4_fortran", np.asfortranarray(base)
    yield "f4_transposed", base.transpose(2, 0, 1)
    yield "f4_strided", base[:, ::2, 1::2]
    yield "f4_reversed", base[::-1]
    yield "i8_offset", np.arange(10, dtype=np.int64)[3:7]
    yield "b1_scalar", np.array(True)
    yield "u2_empty", np.zeros((0, 3), dtype=np.uint16)
    yield "c16_unit_dims", np.zeros((1, 4, 1), dtype=np.complex128)
    yield "f2_broadcast", np.broadcast_to(np.arange(3, dtype=np.float16), (4, 3))
    readonly = np.arange(6, dtype=np.int32)
    readonly.flags.writeable = False
    yield "i4_readonly", readonly
    yield "f8_big_endian", np.arange(4, dtype=">f8")
    yield "datetime", np.array(["2020-01-01", "2020-01-02"], dtype="M8[ns]")
    yield "record", np.zeros(2, dtype=[("x", "<f4"), ("y", "<i2", (2,))])


def write(harness, name, data):
    directory = os.path.join(CORPUS, harness)
    os.makedirs(directory, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(directory, name), mode) as out:
        out.write(data)


# --- dicts (array_interface, cai) ----------------------------------------------------------

def cai_of(interface, stream):
    cai = dict(interface)
    cai["data"] = (0x7F0000001000 if np.prod(interface["shape"]) else 0, interface["data"][1])
    cai["version"] = 3
    cai["stream"] = stream
    cai.pop("mask", None)
    return cai


def dict_seeds():
    for name, array in arrays():
        interface = dict(array.__array_interface__)
        write("array_interface", name, repr(interface))
        if array.dtype.kind in "biufc":
            write("cai", name, repr(cai_of(interface, 1)))
    base = np.arange(6, dtype=np.float32)
    # data as a buffer exporter and as the owner's buffer (data None), with an offset
    write("array_interface", "data_buffer",
          repr({"shape": (2,), "typestr": "<f4", "data": base.tobytes(), "offset": 4,
                "version": 3}))
    write("array_interface", "data_bytearray",
          repr({"shape": (4,), "typestr": "|u1", "data": {"$bytearray": b"abcd"},
                "version": 3}))
    write("array_interface", "data_none_owner",
          repr({"shape": (4, 4), "typestr": "<f4", "data": None, "strides": (16, 4),
                "version": 3, "$owner": {"$memoryview": bytes(64)}}))
    write("array_interface", "mask",
          repr({"shape": (2, 3), "typestr": "<i2", "data": (4096, False), "version": 3,
                "mask": {"$ai": {"shape": (3,), "typestr": "|b1", "data": (8192, True),
                                 "version": 3}}}))
    write("array_interface", "descr",
          repr({"shape": (2,), "typestr": "|V8", "data": (4096, False), "version": 3,
                "descr": [("x", "<f4"), (("title", "y"), "<i2", (2,))]}))
    write("cai", "numba_no_stream",
          repr({"shape": (5,), "strides": None, "typestr": "<f8", "data": (0x7F0000200000, False),
                "version": 2}))
    write("cai", "cupy_mask",
          repr({"shape": (2, 3), "typestr": "<f4", "data": (0x7F0000001000, True), "version": 3,
                "stream": 2, "mask": {"$cai": {"shape": (1, 3), "typestr": "|b1",
                                               "data": (0x7F0000002000, False), "version": 3}}}))
    write("cai", "torch_handle",
          repr({"shape": (4, 4), "typestr": "<f2", "data": (0x7F0000003000, False),
                "strides": (8, 2), "version": 3, "stream": 0x5555DEADBE00,
                "descr": [("", "<f2")]}))
    write("cai", "misbehaving",
          repr({"shape": ({"$index": 2},), "typestr": b"<i4",
                "data": (0x7F0000001000, {"$notruth": 0}), "version": 3,
                "mask": {"$raise": 0}}))


# --- typestrs and formats ------------------------------------------------------------------

def text_seeds():
    typestrs = {np.dtype(t).str for t in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                          "f2", "f4", "f8", "c8", "c16", ">f8", "M8[ns]",
                                          "m8[2s]", "U5", "S0", "V16", "O", "g")}
    typestrs |= {"|t4", "=i4", "<M8[generic]", "|b1"}
    for i, text in enumerate(sorted(typestrs)):
        write("typestr", f"t{i:02d}", text)
    formats = set()
    for _, array in arrays():
        try:
            formats.add(memoryview(array).format)
        except (ValueError, TypeError):
            pass
    formats |= {memoryview(b"x").format, "<d", "=l", "Zd", "Zf", "2w", "@q", "!h", "e",
                "T{<f:x:<h:y:}", "3s", "^P", "N", "?"}
    for i, text in enumerate(sorted(formats)):
        write("buffer_format", f"f{i:02d}", text)


# --- binary structs (dlpack, array_struct, buffer_check) -----------------------------------

PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def dlpack_seed(tensor, control, major=0, minor=0, flags=0):
    out = struct.pack("<BIIQ", control, major, minor, flags)
    out += struct.pack("<QiiiBBHQ", tensor.data or 0, tensor.device_type, tensor.device_id,
                       tensor.ndim, tensor.code, tensor.bits, tensor.lanes, tensor.byte_offset)
    for field in ("shape", "strides"):
        pointer = getattr(tensor, field)
        values = [pointer[i] for i in range(tensor.ndim)] if pointer else [0] * tensor.ndim
        out += struct.pack(f"<{tensor.ndim}q", *values)
    return out


def dlpack_seeds():
    for name, array in arrays():
        if array.dtype.kind not in "biufc" or not array.dtype.isnative:
            continue
        try:
            capsule = array.__dlpack__(max_version=(1, 0))
        except (BufferError, TypeError, ValueError):
            continue
        managed = DLManagedTensorVersioned.from_address(
            PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
        t = managed.dl_tensor
        strides_null = 0x20 if not t.strides else 0
        # as exported (versioned), as a legacy capsule, and as a bare tensor of a 1.2 header
        write("dlpack", f"{name}_versioned",
              dlpack_seed(t, 1 | strides_null, managed.major, managed.minor, managed.flags))
        write("dlpack", f"{name}_legacy", dlpack_seed(t, 0 | strides_null))
        write("dlpack", f"{name}_bare_1_2",
              dlpack_seed(t, 0x80 | 0x08 | strides_null, 1, 2, managed.flags))
        del capsule
    # the consumed and the foreign-major capsules of the capsule rules
    t = DLTensor(data=4096, device_type=1, device_id=0, ndim=0, code=2, bits=32, lanes=1)
    write("dlpack", "used_versioned", dlpack_seed(t, 3, 1, 0))
    write("dlpack", "major_2", dlpack_seed(t, 1, 2, 0))
    write("dlpack", "float4_packed", dlpack_seed(
        DLTensor(data=4096, device_type=1, ndim=0, code=17, bits=4, lanes=1), 1, 1, 3, 4))


class PyArrayInterface(ctypes.Structure):
    _fields_ = [("two", ctypes.c_int), ("nd", ctypes.c_int), ("typekind", ctypes.c_char),
                ("itemsize", ctypes.c_int), ("flags", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)), ("data", ctypes.c_void_p),
                ("descr", ctypes.c_void_p)]


def array_struct_seeds():
    for name, array in arrays():
        capsule = array.__array_struct__
        inter = PyArrayInterface.from_address(PyCapsule_GetPointer(capsule, None))
        control = (0x08 if not inter.strides else 0) | (0x10 if inter.descr else 0)
        out = struct.pack("<BiiBiiQ", control, inter.two, inter.nd, inter.typekind[0],
                          inter.itemsize, inter.flags, inter.data or 0)
        for field in ("shape", "strides"):
            pointer = getattr(inter, field)
            values = [pointer[i] for i in range(inter.nd)] if pointer else [0] * inter.nd
            out += struct.pack(f"<{inter.nd}q", *values)
        write("array_struct", name, out)


def arrow_arrays(pa):
    """pyarrow's exports of the kinds the validator meets: every fixed-width primitive, a
    slice (an offset), nulls, an empty array, a boolean and a string array."""
    for name in ("int8", "uint16", "int32", "uint64", "float16", "float32", "float64"):
        yield name, pa.array(np.arange(12).astype(name))
    yield "int64_slice", pa.array(np.arange(20, dtype=np.int64)).slice(5, 8)
    yield "int32_nulls", pa.array([1, None, 3, 4, None, 6], type=pa.int32())
    yield "float64_empty", pa.array([], type=pa.float64())
    yield "bool", pa.array([True, False, True])
    yield "string", pa.array(["a", "bc"])


def arrow_seed(schema, array):
    """The input of fuzz_arrow for an export (its layout comment)."""
    buffers = [array.buffers[i] for i in range(min(array.n_buffers, 2))] + [None, None]
    width = {b"c": 1, b"C": 1, b"s": 2, b"S": 2, b"i": 4, b"I": 4, b"l": 8, b"L": 8,
             b"e": 2, b"f": 4, b"g": 8}.get(schema.format, 1)
    end = array.offset + array.length
    bitmap = ctypes.string_at(buffers[0], (end + 7) // 8) if buffers[0] else b""
    control = (0x10 if not buffers[0] else 0) | (0x20 if not buffers[1] else 0)
    out = struct.pack("<BB", control, len(schema.format)) + schema.format + b"\0"
    out += struct.pack("<7q", schema.flags, schema.n_children, array.length, array.null_count,
                       array.offset, array.n_buffers, array.n_children)
    out += struct.pack("<HH", len(bitmap), min(end * width, 60 * 1024)) + bitmap
    return out + struct.pack("<BQ", 0, 0)


def arrow_device_seed(schema, device_array):
    """The input of fuzz_arrow for a C device data interface export: the array's input, then the
    device fields (device_id, device_type, sync_event, reserved[0])."""
    device_id, device_type, sync_event, reserved = struct.unpack_from(
        "<qi4xQq", ctypes.string_at(ctypes.addressof(device_array) + 80, 32))
    return (arrow_seed(schema, device_array) +
            struct.pack("<BqiQq", 1, device_id, device_type, sync_event or 0, reserved))


def arrow_seeds():
    try:
        import pyarrow as pa
    except ImportError:
        return
    # The structs' ctypes layouts are the test kit's (tests/probes/_testkit.py).
    sys.path[:0] = [os.path.join(HERE, "..", "..", "probes"), os.path.join(HERE, "..", "probes")]
    import _testkit

    for name, x in arrow_arrays(pa):
        schema_capsule, array_capsule = x.__arrow_c_array__()
        schema = _testkit.ArrowSchema.from_address(
            PyCapsule_GetPointer(schema_capsule, b"arrow_schema"))
        array = _testkit.ArrowArray.from_address(
            PyCapsule_GetPointer(array_capsule, b"arrow_array"))
        write("arrow", name, arrow_seed(schema, array))
        schema_capsule, device_capsule = x.__arrow_c_device_array__()
        schema = _testkit.ArrowSchema.from_address(
            PyCapsule_GetPointer(schema_capsule, b"arrow_schema"))
        device_array = _testkit.ArrowArray.from_address(
            PyCapsule_GetPointer(device_capsule, b"arrow_device_array"))
        write("arrow", name + "_device", arrow_device_seed(schema, device_array))


PyBUF = {"SIMPLE": 0, "WRITABLE": 1, "FORMAT": 4, "ND": 8, "STRIDES": 0x18,
         "C_CONTIGUOUS": 0x38, "F_CONTIGUOUS": 0x58, "ANY_CONTIGUOUS": 0x98, "INDIRECT": 0x118}


def buffer_seed(view, flags):
    fmt = view.format.encode() if flags & PyBUF["FORMAT"] else b""
    want_nd = flags & PyBUF["ND"] == PyBUF["ND"]
    want_strides = flags & PyBUF["STRIDES"] == PyBUF["STRIDES"]
    control = ((0x02 if not fmt else 0) | (0x04 if not want_nd else 0) |
               (0x08 if not want_strides else 0) | 0x10)
    ndim = view.ndim if want_nd else 1
    if ndim == 0:
        control |= 0x0C  # a scalar has neither shape nor strides
    out = struct.pack("<iBqqiiQ", flags, control, view.nbytes, view.itemsize,
                      int(view.readonly), ndim, 0x7F0000004000)
    out += struct.pack("<B", len(fmt)) + fmt
    shape = view.shape if want_nd else (view.nbytes // view.itemsize,)
    strides = view.strides if want_nd else (view.itemsize,)  # NULL unless asked for
    out += struct.pack(f"<{ndim}q", *shape) + struct.pack(f"<{ndim}q", *strides)
    out += struct.pack(f"<{ndim}q", *([-1] * ndim))
    return out


def buffer_seeds():
    requests = [("records_ro", PyBUF["STRIDES"] | PyBUF["FORMAT"]),
                ("full", PyBUF["INDIRECT"] | PyBUF["FORMAT"] | PyBUF["WRITABLE"]),
                ("c_contig", PyBUF["C_CONTIGUOUS"] | PyBUF["FORMAT"]),
                ("simple", PyBUF["SIMPLE"]), ("nd", PyBUF["ND"])]
    for name, array in list(arrays()) + [("bytes", b"abcdef")]:
        try:
            view = memoryview(array)
        except (ValueError, TypeError):
            continue
        for request, flags in requests:
            if view.ndim == 0 and request != "records_ro":
                continue
            write("buffer_check", f"{name}_{request}", buffer_seed(view, flags))


def main():
    dict_seeds()
    text_seeds()
    dlpack_seeds()
    array_struct_seeds()
    buffer_seeds()
    arrow_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
