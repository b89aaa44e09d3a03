"""A library that gets Arrow streams (__arrow_c_stream__) wrong, for interopcheck's own tests.

Its arrays are pyarrow arrays behind a class of its own. What happens depends on the dtype:

  as a producer (into pyarrow.chunked_array and interopcheck's own consumer):
    float64   pyarrow's own stream of one array                        -> pass
    float32   the elements split into 24 arrays of one element          -> pass (joined)
    int32     get_next fails with EIO                                   -> fail (arrow.stream)
    int16     a stream of other values than the array's                 -> fail (exchange.contents)
    uint8     refuses any requested_schema, its own type too            -> the requested_schema
              variant fails (arrow.requested_schema)
  as a consumer (importing pyarrow's streams):
    uint16    imports with pyarrow.chunked_array                        -> pass
    uint8     imports, then takes a second stream and never releases it -> fail (arrow.release)

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

# How a reproducer spells streamlib: the test module itself (_testkit.self_repro).
REPRO = {
    **_testkit.self_repro("streamlib"),
    "consume": {"arrow_stream": "streamlib.consume({obj}, 'arrow_stream', None)"},
    "tolist": "{y}.to_pylist()",
}

pa = None
_kept = []  # structs and callbacks handed out, alive for the process

_GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


def _failing_stream(chunked):
    """A stream whose schema is the array's and whose get_next fails with EIO."""
    real_capsule = chunked.__arrow_c_stream__()
    real = ArrowArrayStream.from_address(
        _testkit.capsule_pointer(real_capsule, b"arrow_array_stream"))
    ours = ArrowArrayStream()

    def get_schema(_self, out):
        return _GET_SCHEMA(real.get_schema)(ctypes.addressof(real), out)

    def get_next(_self, _out):
        return 5  # EIO

    def last_error(_self):
        return b"streamlib: no arrays today"

    def release(stream):
        # `stream` is where the consumer moved the struct to: that is what must be marked
        _RELEASE(real.release)(ctypes.addressof(real))
        ArrowArrayStream.from_address(stream).release = None

    callbacks = [_GET_SCHEMA(get_schema), _GET_NEXT(get_next), _LAST_ERROR(last_error),
                 _RELEASE(release)]
    for field, fn in zip(("get_schema", "get_next", "get_last_error", "release"), callbacks):
        setattr(ours, field, ctypes.cast(fn, ctypes.c_void_p).value)
    _kept.extend([real_capsule, ours, callbacks])
    return _capsule_new(ctypes.addressof(ours), b"arrow_array_stream", None)


class Array:
    """streamlib's array: a pyarrow array whose stream breaks a rule chosen by its dtype."""

    def __init__(self, array):
        self.array = array

    def __arrow_c_stream__(self, requested_schema=None):
        name = str(self.array.type)
        if name == "uint8" and requested_schema is not None:
            raise NotImplementedError("streamlib takes no requested_schema")
        if name == "float" and len(self.array):
            chunked = pa.chunked_array([self.array.slice(i, 1) for i in range(len(self.array))])
        elif name == "int16":
            chunked = pa.chunked_array([pa.array([v + 1 for v in self.array.to_pylist()],
                                                 type=self.array.type)])
        else:
            chunked = pa.chunked_array([self.array])
        if name == "int32":
            return _failing_stream(chunked)
        return chunked.__arrow_c_stream__(requested_schema)


def load():
    global pa
    pa, info = _testkit.load_pyarrow_plan(
        "streamlib", exports={"arrow_stream": {"call": "Array.__arrow_c_stream__"}},
        imports=_probekit.imports({"arrow_stream": "streamlib.consume(obj)"}, zero_copy=True,
                                  readonly="always"))
    return info


def build(data, dtype, ops, readonly=False):
    return Array(_testkit.pyarrow_flat(pa, data, dtype, ops, "streamlib"))


def describe(x):
    if isinstance(x, Array):
        x = x.array
    if isinstance(x, pa.ChunkedArray):
        if x.num_chunks != 1:
            return _probekit.contents_description(x.to_numpy(),
                                                     _probekit.arrow_dtype_name(x.type))
        x = x.chunk(0)
    address = x.buffers()[1].address + x.offset * x.type.byte_width if len(x) else 0
    return _probekit.pointer_description(address, [len(x)], None,
                                         _probekit.arrow_dtype_name(x.type), True)


def consume(obj, protocol, dtype):
    y = pa.chunked_array(obj)
    if str(y.type) == "uint8":
        # a second stream, moved out of its capsule and never released: a leak
        capsule = obj.__arrow_c_stream__()
        stream = ArrowArrayStream.from_address(
            _testkit.capsule_pointer(capsule, b"arrow_array_stream"))
        _kept.append(ArrowArrayStream.from_buffer_copy(stream))
        stream.release = None
    return y
