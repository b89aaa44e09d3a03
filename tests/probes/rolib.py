"""A library that gets read-only wrong, for interopcheck's own integration tests.

Its arrays wrap NumPy arrays. What goes wrong depends on the dtype:

  as a producer (its read-only arrays, the `readonly` variant, exported to numpy):
    float32   __array_interface__ says writable for read-only memory  -> fail (array_interface.readonly)
              __array_struct__ sets WRITEABLE for read-only memory     -> fail (array_struct.flags)
    float64   exports read-only arrays correctly                       -> pass
  as a consumer (importing numpy's arrays):
    int32     describes its import of read-only memory as writable      -> fail (exchange.readonly)
    int16     describes its import of writable memory as read-only      -> fail (exchange.writable)
    float64   imports correctly                                         -> pass

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""


import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

NPY_ARRAY_WRITEABLE = 0x0400


class RoArray(_testkit.Array):
    def _lies(self):
        return self.array.dtype.name == "float32" and not self.array.flags.writeable

    @property
    def __array_interface__(self):
        spec = dict(self.array.__array_interface__)
        if self._lies():
            spec["data"] = (spec["data"][0], False)
        return spec

    @property
    def __array_struct__(self):
        capsule = self.array.__array_struct__
        if self._lies():
            # NumPy allocates a fresh struct for every capsule: changing it touches no one else
            address = _testkit.capsule_pointer(capsule, None)
            _testkit.PyArrayInterface.from_address(address).flags |= NPY_ARRAY_WRITEABLE
        return capsule


class Imported:
    """What rolib's consumer returns: a NumPy view whose read-only flag it misreports."""

    def __init__(self, array, readonly):
        self.array, self.readonly = array, readonly


def load():
    return _testkit.load_numpy(
        dtypes=["float32", "float64", "int32", "int16"],
        layouts=["contiguous", "flat"],
        notes={"bool": "rolib has only the dtypes of its test plan"},
        readonly=True,
        exports={"array_interface": {"call": "RoArray.__array_interface__"},
                 "array_struct": {"call": "RoArray.__array_struct__"}},
        imports={"array_interface": _testkit.NUMPY_ARRAY_INTERFACE})


def build(data, dtype, ops, readonly=False):
    array = _testkit.numpy_array(data, dtype, ops)
    if readonly:
        array.setflags(write=False)
    return RoArray(array)


def describe(x):
    if isinstance(x, Imported):
        return _probekit.numpy_like_description(x.array, readonly=x.readonly)
    return _testkit.describe(x)


def consume(obj, protocol, dtype):
    array = _testkit.np.asarray(obj)
    readonly = not array.flags.writeable
    if dtype == "int32":
        readonly = False
    elif dtype == "int16":
        readonly = True
    return Imported(array, readonly)
