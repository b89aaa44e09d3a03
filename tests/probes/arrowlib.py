"""A library that gets the Arrow PyCapsule interface wrong, for interopcheck's own tests.

Its arrays are pyarrow arrays behind a class of its own. What goes wrong depends on the dtype:

  as a producer (__arrow_c_array__, into pyarrow and interopcheck's own consumer):
    float64   exports pyarrow's own capsules                          -> pass
    int32     marks one element null, though the array has none       -> fail (arrow.buffers)
    int16     returns the capsules as (array, schema)                 -> fail (arrow.capsules)
    float32   with nulls (the nulls variant): exports the values
              without their validity bitmap                           -> fail (arrow.nulls)
    uint8     refuses any requested_schema, its own type too           -> the requested_schema
              variant fails (arrow.requested_schema)
  as a producer over __arrow_c_device_array__ (arrow_device):
    uint16    names device type 99, which does not exist              -> fail (arrow.device)
    float32   accepts an unknown keyword instead of raising
              NotImplementedError (the unknown_keyword variant)       -> fail (arrow.device_keywords)
  as a consumer (importing pyarrow's exports):
    uint8     moves the ArrowArray out of its capsule and never
              releases it (a leak)                                    -> fail (arrow.release)
    uint16    imports with pyarrow.array                              -> pass
    float32   imports the values and drops the validity bitmap: with
              nulls (the nulls variant) they read as values           -> fail (arrow.nulls)
  as a relay (its Arrow import handed on over DLPack, the relay_dlpack variant):
    uint16    hands on each element plus one                          -> fail (exchange.relay)
    float64   hands on pyarrow's own __dlpack__                       -> pass

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import ctypes

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

# Where ArrowDeviceArray keeps device_type: after the ArrowArray and the int64 device_id.
_DEVICE_TYPE_AT = ctypes.sizeof(_testkit.ArrowArray) + 8

pa = None
_kept = []  # the structs the leaking consumer moved out and never released


class Array:
    """arrowlib's array: a pyarrow array whose export breaks a rule chosen by its dtype."""

    def __init__(self, array):
        self.array = array

    def __arrow_c_array__(self, requested_schema=None):
        name = str(self.array.type)
        if name == "uint8" and requested_schema is not None:
            raise NotImplementedError("arrowlib takes no requested_schema")
        if name == "int32":
            with_null = pa.array(self.array.to_pylist(), type=self.array.type,
                                 mask=[i == 0 for i in range(len(self.array))])
            return with_null.__arrow_c_array__(requested_schema)
        if self.array.type == pa.float32():  # str() spells it "float"
            return _without_nulls(self.array).__arrow_c_array__(requested_schema)
        schema, array = self.array.__arrow_c_array__(requested_schema)
        return (array, schema) if name == "int16" else (schema, array)

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        # every keyword is ignored, where the spec asks for NotImplementedError
        schema, array = self.array.__arrow_c_device_array__(requested_schema)
        if str(self.array.type) == "uint16":
            pointer = _testkit.capsule_pointer(array, b"arrow_device_array")
            ctypes.c_int32.from_address(pointer + _DEVICE_TYPE_AT).value = 99
        return schema, array


def _without_nulls(array):
    """The same values buffer, its validity bitmap dropped: every null reads as a value."""
    return pa.Array.from_buffers(array.type, len(array), [None, array.buffers()[1]],
                                 offset=array.offset)


def load():
    global pa
    pa, info = _testkit.load_pyarrow_plan(
        "arrowlib", exports={"arrow": {"call": "Array.__arrow_c_array__"},
                             "arrow_device": {"call": "Array.__arrow_c_device_array__"},
                             "dlpack": {"call": "arrowlib.export(x, 'dlpack')"}},
        imports=_probekit.imports({"arrow": "arrowlib.consume(obj)"}, zero_copy=True,
                                  readonly="always"),
        nulls=True)
    return info


def build(data, dtype, ops, readonly=False, valid=None):
    return Array(_testkit.pyarrow_flat(pa, data, dtype, ops, "arrowlib", valid))


def export(x, protocol):
    if protocol != "dlpack":
        return x
    array = x.array if isinstance(x, Array) else x
    if array.type == pa.uint16():  # a relay that hands on other values than it holds
        return pa.array([v + 1 for v in array.to_pylist()], type=array.type)
    return array


def describe(x):
    array = x.array if isinstance(x, Array) else x
    data = array.buffers()[1]
    address = 0 if data is None else data.address + array.offset * array.type.byte_width
    dtype = _probekit.arrow_dtype_name(array.type)
    return _probekit.pointer_description(address, [len(array)], None, dtype, True) | {
        "validity": _probekit.arrow_validity(array)}


def _leak(obj, dtype):
    """Moves the ArrowArray out of its capsule as a consumer does, then never releases it."""
    schema_capsule, array_capsule = obj.__arrow_c_array__()
    pointer = _testkit.capsule_pointer(array_capsule, b"arrow_array")
    source = _testkit.ArrowArray.from_address(pointer)
    moved = _testkit.ArrowArray.from_buffer_copy(source)
    source.release = None
    _kept.append(moved)
    width = _probekit.ITEMSIZE[dtype]
    values = pa.foreign_buffer(moved.buffers[1] + moved.offset * width, moved.length * width,
                               base=moved)
    return pa.Array.from_buffers(getattr(pa, dtype)(), moved.length, [None, values])


def consume(obj, protocol, dtype):
    if dtype == "uint8":
        return _leak(obj, dtype)
    if dtype == "float32":
        return _without_nulls(pa.array(obj))
    return pa.array(obj)
