#include "ic_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_pattern.h"
#include "ic_text.h"

/* Imports the Python file at `path` as module `module_name` and registers it in sys.modules
 * (so a probe can import the kit, and tracebacks name the module). New reference. */
static PyObject *ic_import_file(const char *module_name, const char *path)
{
    PyObject *util = NULL, *spec = NULL, *module = NULL, *loader = NULL, *result = NULL,
             *modules = NULL;

    util = PyImport_ImportModule("importlib.util");
    if (!util)
        goto fail;
    spec = PyObject_CallMethod(util, "spec_from_file_location", "ss", module_name, path);
    if (!spec)
        goto fail;
    if (spec == Py_None) {
        PyErr_Format(PyExc_ImportError, "cannot load '%s' as a Python module", path);
        goto fail;
    }
    module = PyObject_CallMethod(util, "module_from_spec", "O", spec);
    if (!module)
        goto fail;
    modules = PyImport_GetModuleDict(); /* borrowed */
    if (PyDict_SetItemString(modules, module_name, module) < 0)
        goto fail;
    loader = PyObject_GetAttrString(spec, "loader");
    if (!loader)
        goto fail;
    /* Registered before it runs, as importlib does; a module that fails to run stays
     * registered under its private name, which nothing imports again. */
    result = PyObject_CallMethod(loader, "exec_module", "O", module);
    if (!result)
        goto fail;
    Py_DECREF(util);
    Py_DECREF(spec);
    Py_DECREF(loader);
    Py_DECREF(result);
    return module;

fail:
    Py_XDECREF(util);
    Py_XDECREF(spec);
    Py_XDECREF(module);
    Py_XDECREF(loader);
    Py_XDECREF(result);
    return NULL;
}

int ic_probe_kit_load(const char *path, struct ic_py_exc *exc)
{
    PyObject *kit = ic_import_file("_probekit", path);
    if (!kit) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    Py_DECREF(kit);
    return 0;
}

char *ic_probe_reproducer(const char *kit_path, const char *failure_json, const struct ic_case *c,
                          struct ic_probe *producer, struct ic_probe *consumer,
                          struct ic_py_exc *exc)
{
    PyObject *repro = NULL, *ops = NULL, *script = NULL, *valid = NULL;
    char path[1100], *text = NULL;
    const struct ic_layout_info *layout = ic_layout_info(c->layout);

    /* The generator lives next to the kit; it is loaded once per worker. */
    repro = PyImport_ImportModule("_repro");
    if (!repro) {
        PyErr_Clear();
        const char *slash = strrchr(kit_path, '/');
        int dir = slash ? (int)(slash - kit_path) : 1;
        snprintf(path, sizeof(path), "%.*s/_repro.py", dir, slash ? kit_path : ".");
        repro = ic_import_file("_repro", path);
    }
    ops = repro ? ic_layout_ops_to_python(layout) : NULL;
    /* the nulls variants' valid=, as build() had it, or None */
    if (ops)
        valid = ic_variant_has_nulls(c->variant) ? ic_probe_valid_bytes(layout)
                                                 : Py_NewRef(Py_None);
    if (valid)
        script = PyObject_CallMethod(repro, "generate", "sOnOOO", failure_json, ops,
                                     (Py_ssize_t)layout->base_len, producer->module,
                                     consumer ? consumer->module : Py_None, valid);
    if (script && !PyUnicode_Check(script))
        PyErr_SetString(PyExc_TypeError, "_repro.generate() must return a str");
    else if (script) {
        Py_ssize_t len = 0;
        const char *utf8 = PyUnicode_AsUTF8AndSize(script, &len);
        /* The script holds the probes' REPRO text: refused whole when it is longer than a
         * report keeps, as a script that was cut would not run. */
        if (utf8 && (size_t)len > IC_TEXT_SCRIPT_CAP)
            PyErr_Format(PyExc_ValueError,
                         "the reproducer is %zd bytes, more than the %d a report keeps (the "
                         "probes' REPRO text is too long)",
                         len, IC_TEXT_SCRIPT_CAP);
        else if (utf8 && (text = malloc((size_t)len + 1)) != NULL)
            memcpy(text, utf8, (size_t)len + 1);
        else if (utf8)
            PyErr_NoMemory();
    }
    if (!text)
        ic_py_fetch(exc);
    Py_XDECREF(script);
    Py_XDECREF(valid);
    Py_XDECREF(ops);
    Py_XDECREF(repro);
    return text;
}

PyObject *ic_probe_valid_bytes(const struct ic_layout_info *layout)
{
    PyObject *valid = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)layout->base_len);
    if (!valid)
        return NULL;
    char *bytes = PyBytes_AS_STRING(valid);
    for (int64_t i = 0; i < layout->base_len; i++)
        bytes[i] = ic_pattern_is_null(i) ? 0 : 1;
    return valid;
}

/* True when the pending exception is ModuleNotFoundError for the probe's library itself
 * (the probe's MODULE, or its name); leaves the exception pending. */
static bool ic_import_names_module(PyObject *probe_module, const char *name)
{
    if (!PyErr_ExceptionMatches(PyExc_ModuleNotFoundError))
        return false;
    PyObject *type = NULL, *value = NULL, *traceback = NULL;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject *missing = value ? PyObject_GetAttrString(value, "name") : NULL;
    PyObject *module = PyObject_GetAttrString(probe_module, "MODULE");
    if (!module) {
        PyErr_Clear();
        module = PyUnicode_FromString(name);
    }
    bool same = missing && module && PyUnicode_Check(missing) &&
                PyObject_RichCompareBool(missing, module, Py_EQ) == 1;
    PyErr_Clear();
    Py_XDECREF(missing);
    Py_XDECREF(module);
    PyErr_Restore(type, value, traceback);
    return same;
}

int ic_probe_load(struct ic_probe *probe, const char *name, const char *path,
                  char **ret_info_json, struct ic_py_exc *exc)
{
    PyObject *module = NULL, *info = NULL, *warmed = NULL;
    char module_name[IC_NAME_MAX + 32];
    char *json = NULL;

    snprintf(module_name, sizeof(module_name), "interopcheck_probe_%s", name);
    module = ic_import_file(module_name, path);
    if (!module)
        goto fail;
    info = PyObject_CallMethod(module, "load", NULL);
    if (!info)
        goto fail;
    if (!PyDict_Check(info)) {
        PyErr_Format(PyExc_TypeError, "probe %s: load() returned %.80s, not a dict", name,
                     Py_TYPE(info)->tp_name);
        goto fail;
    }
    json = ic_py_json_dumps(info);
    if (!json)
        goto fail;
    /* warm(): what the library sets up on its first operation is set up here, once, in the
     * process that the workers and case children are copies of (probes/README.md). It only
     * saves time: an exception in it is dropped, and the cases meet whatever it met. */
    if (PyObject_HasAttrString(module, "warm")) {
        warmed = PyObject_CallMethod(module, "warm", NULL);
        if (!warmed)
            PyErr_Clear();
        Py_XDECREF(warmed);
    }

    memset(probe, 0, sizeof(*probe));
    snprintf(probe->name, sizeof(probe->name), "%s", name);
    snprintf(probe->path, sizeof(probe->path), "%s", path);
    probe->module = module;
    probe->info = info;
    *ret_info_json = json;
    return 0;

fail:
    probe->not_installed = module && ic_import_names_module(module, name);
    ic_py_fetch(exc);
    Py_XDECREF(module);
    Py_XDECREF(info);
    free(json);
    return IC_EPROBE;
}

int ic_probe_open(struct ic_probe *probe, const char *name, const char *path, struct ic_py_exc *exc)
{
    char module_name[IC_NAME_MAX + 32];
    snprintf(module_name, sizeof(module_name), "interopcheck_probe_%s", name);
    PyObject *module = ic_import_file(module_name, path);
    if (!module) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    memset(probe, 0, sizeof(*probe));
    snprintf(probe->name, sizeof(probe->name), "%s", name);
    snprintf(probe->path, sizeof(probe->path), "%s", path);
    probe->module = module;
    return 0;
}

void ic_probe_release(struct ic_probe *probe)
{
    Py_CLEAR(probe->module);
    Py_CLEAR(probe->info);
}

int ic_probe_import_traits(const struct ic_probe *probe, enum ic_protocol protocol,
                           struct ic_import_traits *ret)
{
    struct ic_import_traits traits = {.present = false, .zero_copy = false, .typed = true,
                                      .claimed = true, .readonly = IC_READONLY_NEVER};
    PyObject *imports = PyDict_GetItemString(probe->info, "imports"); /* borrowed */
    PyObject *entry = imports && PyDict_Check(imports)
                          ? PyDict_GetItemString(imports, ic_protocol_id(protocol))
                          : NULL; /* borrowed */
    if (entry && PyDict_Check(entry)) {
        traits.present = true;
        PyObject *value = PyDict_GetItemString(entry, "zero_copy");
        traits.zero_copy = value && PyObject_IsTrue(value) == 1;
        value = PyDict_GetItemString(entry, "typed");
        traits.typed = !value || PyObject_IsTrue(value) == 1;
        value = PyDict_GetItemString(entry, "claimed");
        traits.claimed = !value || PyObject_IsTrue(value) == 1;
        value = PyDict_GetItemString(entry, "readonly");
        if (value && PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, "always") == 0)
            traits.readonly = IC_READONLY_ALWAYS;
        else if (value && PyObject_IsTrue(value) == 1)
            traits.readonly = IC_READONLY_BOTH;
    }
    PyErr_Clear();
    *ret = traits;
    return 0;
}

/* True when `list` (a deviation's filter) is absent or holds `name`. */
static bool ic_listed(PyObject *entry, const char *key, const char *name)
{
    PyObject *list = PyDict_GetItemString(entry, key); /* borrowed */
    if (!list)
        return true;
    if (!PyList_Check(list) && !PyTuple_Check(list))
        return false;
    PyObject *seq = PySequence_Fast(list, "");
    if (!seq) {
        PyErr_Clear();
        return false;
    }
    bool found = false;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && !found; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        found = PyUnicode_Check(item) && PyUnicode_CompareWithASCIIString(item, name) == 0;
    }
    Py_DECREF(seq);
    return found;
}

static bool ic_string_is(PyObject *entry, const char *key, const char *want)
{
    PyObject *value = PyDict_GetItemString(entry, key); /* borrowed */
    return value && PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, want) == 0;
}

bool ic_probe_deviation(const struct ic_probe *probe, enum ic_rule rule, enum ic_side side,
                        const struct ic_case *c, char *ret_link, size_t size)
{
    PyObject *list = probe->info ? PyDict_GetItemString(probe->info, "deviations") : NULL;
    bool found = false;
    if (!list || !PyList_Check(list))
        return false;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list) && !found; i++) {
        PyObject *entry = PyList_GET_ITEM(list, i); /* borrowed */
        if (!PyDict_Check(entry) || !ic_string_is(entry, "rule", ic_rule_id(rule)) ||
            !ic_string_is(entry, "side", ic_side_name(side)) ||
            !ic_listed(entry, "protocols", ic_protocol_id(c->protocol)) ||
            !ic_listed(entry, "dtypes", ic_dtype_name(c->dtype)) ||
            !ic_listed(entry, "layouts", ic_layout_name(c->layout)))
            continue;
        PyObject *link = PyDict_GetItemString(entry, "link"); /* borrowed */
        const char *text = link && PyUnicode_Check(link) ? PyUnicode_AsUTF8(link) : NULL;
        /* A deviation is documented only with a link to the library's own documentation. */
        if (text && (strncmp(text, "https://", 8) == 0 || strncmp(text, "http://", 7) == 0)) {
            ic_text_copy(ret_link, size, text, strlen(text)); /* cut with a marker, whole UTF-8 */
            found = true;
        }
    }
    PyErr_Clear();
    return found;
}

static PyObject *ic_int_list(const int64_t *values, int n)
{
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *item = PyLong_FromLongLong(values[i]);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *ic_bound(int64_t value)
{
    if (value == IC_SLICE_NONE)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(value);
}

static const char *const ic_op_names[] = {
    [IC_OP_RESHAPE] = "reshape",
    [IC_OP_PERMUTE] = "permute",
    [IC_OP_SLICE] = "slice",
    [IC_OP_BROADCAST] = "broadcast",
    [IC_OP_UNIT_STRIDE] = "unit_stride",
    [IC_OP_NEG_VIEW] = "neg_view",
    [IC_OP_CONJ_VIEW] = "conj_view",
    [IC_OP_REQUIRES_GRAD] = "requires_grad",
    [IC_OP_SUBCLASS] = "subclass",
    [IC_OP_OTHER_DEVICE] = "other_device",
};

PyObject *ic_layout_ops_to_python(const struct ic_layout_info *layout)
{
    PyObject *ops = PyList_New(layout->nops);
    for (int i = 0; ops && i < layout->nops; i++) {
        const struct ic_layout_op *op = &layout->ops[i];
        PyObject *args = NULL;
        if (op->kind == IC_OP_SLICE) {
            args = PyList_New(op->n);
            for (int d = 0; args && d < op->n; d++) {
                PyObject *triple = Py_BuildValue("[NNN]", ic_bound(op->slice[d][0]),
                                                 ic_bound(op->slice[d][1]),
                                                 ic_bound(op->slice[d][2]));
                if (!triple) {
                    Py_CLEAR(args);
                    break;
                }
                PyList_SET_ITEM(args, d, triple);
            }
        } else {
            args = ic_int_list(op->dims, op->n);
        }
        PyObject *pair = args ? Py_BuildValue("(sN)", ic_op_names[op->kind], args) : NULL;
        if (!pair) {
            Py_CLEAR(ops);
            break;
        }
        PyList_SET_ITEM(ops, i, pair);
    }
    return ops;
}

PyObject *ic_probe_build(struct ic_probe *probe, PyObject *data, enum ic_dtype dtype,
                         const struct ic_layout_info *layout, bool readonly, PyObject *valid,
                         const char *device, struct ic_py_exc *exc)
{
    PyObject *ops = NULL, *array = NULL, *build = NULL, *args = NULL, *kwargs = NULL;

    ops = ic_layout_ops_to_python(layout);
    build = PyObject_GetAttrString(probe->module, "build");
    kwargs = PyDict_New();
    if (!ops || !build || !kwargs)
        goto done;
    args = Py_BuildValue("(OsOO)", data, ic_dtype_name(dtype), ops, readonly ? Py_True : Py_False);
    if (!args)
        goto done;
    if (strcmp(device, "cpu") != 0) {
        PyObject *name = PyUnicode_FromString(device);
        int rc = name ? PyDict_SetItemString(kwargs, "device", name) : -1;
        Py_XDECREF(name);
        if (rc < 0)
            goto done;
    }
    if (valid && PyDict_SetItemString(kwargs, "valid", valid) < 0)
        goto done;
    array = PyObject_Call(build, args, kwargs);

done:
    if (!array)
        ic_py_fetch(exc);
    Py_XDECREF(ops);
    Py_XDECREF(build);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return array;
}

int ic_probe_stream(struct ic_probe *probe, PyObject *array, uintptr_t *ret,
                    struct ic_py_exc *exc)
{
    if (!PyObject_HasAttrString(probe->module, "stream"))
        return IC_ENOTFOUND;
    PyObject *stream = PyObject_CallMethod(probe->module, "stream", "O", array);
    if (!stream) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    unsigned long long value = PyLong_AsUnsignedLongLongMask(stream);
    Py_DECREF(stream);
    if (PyErr_Occurred()) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    *ret = (uintptr_t)value;
    return 0;
}

static int ic_parse_device(PyObject *device, struct ic_view *view)
{
    static const struct {
        const char *name;
        int32_t type;
    } names[] = {{"cpu", IC_DEVICE_CPU},
                 {"cuda", IC_DEVICE_CUDA},
                 {"cuda_host", IC_DEVICE_CUDA_HOST},
                 {"cuda_managed", IC_DEVICE_CUDA_MANAGED}};
    if (!device || !PySequence_Check(device) || PySequence_Size(device) != 2) {
        PyErr_SetString(PyExc_ValueError, "describe(): 'device' must be [name, index]");
        return IC_EPROBE;
    }
    PyObject *name = PySequence_GetItem(device, 0);
    PyObject *index = PySequence_GetItem(device, 1);
    int rc = IC_EPROBE;
    for (size_t i = 0; name && index && i < sizeof(names) / sizeof(names[0]); i++) {
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, names[i].name) == 0) {
            view->device_type = names[i].type;
            view->device_id = PyLong_AsLongLong(index);
            rc = PyErr_Occurred() ? IC_EPROBE : 0;
        }
    }
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "describe(): unknown device name");
    Py_XDECREF(name);
    Py_XDECREF(index);
    return rc;
}

static int ic_parse_int_sequence(PyObject *seq, int64_t *values, int *ret_n, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return IC_EPROBE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > IC_MAX_NDIM) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "describe(): %s has %zd entries", what, n);
        return IC_EPROBE;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (PyErr_Occurred()) {
            Py_DECREF(fast);
            return IC_EPROBE;
        }
    }
    Py_DECREF(fast);
    *ret_n = (int)n;
    return 0;
}

static int ic_describe_from_buffer(PyObject *obj, struct ic_described *out)
{
    if (PyObject_GetBuffer(obj, &out->buffer, PyBUF_RECORDS_RO) < 0)
        return IC_EPROBE;
    out->holds_buffer = true;
    struct ic_view *view = &out->view;
    view->data = (uintptr_t)out->buffer.buf;
    view->itemsize = (int)out->buffer.itemsize;
    view->ndim = out->buffer.ndim;
    /* The library's buffer: its shape and strides are read through the guard, as every
     * exporter's are (ic_buffer), so a broken one is the probe's error, not a dead worker. */
    size_t dims = (size_t)(view->ndim > 0 ? view->ndim : 0) * sizeof(Py_ssize_t);
    Py_ssize_t shape[IC_MAX_NDIM], strides[IC_MAX_NDIM];
    if (view->ndim < 0 || view->ndim > IC_MAX_NDIM || (dims && !out->buffer.shape) ||
        (dims && ic_guard_copy(shape, (uintptr_t)out->buffer.shape, dims) < 0) ||
        (dims && out->buffer.strides &&
         ic_guard_copy(strides, (uintptr_t)out->buffer.strides, dims) < 0)) {
        PyErr_SetString(PyExc_ValueError, "describe(): the buffer's ndim, shape or strides "
                                          "cannot be read");
        return IC_EPROBE;
    }
    for (int i = 0; i < view->ndim; i++)
        view->shape[i] = shape[i];
    if (out->buffer.strides) {
        for (int i = 0; i < view->ndim; i++)
            view->strides[i] = strides[i];
    } else if (ic_view_set_c_strides(view) < 0) {
        PyErr_SetString(PyExc_OverflowError, "describe(): buffer too large");
        return IC_EPROBE;
    }
    view->readonly = out->buffer.readonly != 0;
    out->readonly_known = true;
    out->pointer_known = true;
    return 0;
}

static int ic_describe_from_bytes(PyObject *bytes, struct ic_described *out)
{
    char *data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(bytes, &data, &size) < 0)
        return IC_EPROBE;
    out->bytes = malloc(size > 0 ? (size_t)size : 1);
    if (!out->bytes) {
        PyErr_NoMemory();
        return IC_EPROBE;
    }
    memcpy(out->bytes, data, (size_t)size);
    out->view.data = (uintptr_t)out->bytes;
    out->view.host_copy = true;
    out->pointer_known = false;
    return 0;
}

/* describe()'s "validity" (probes/README.md): absent, nobody can say; None, no element is
 * null; bytes, one per element (0 for a null), copied into `out`; (address, bit offset) of
 * the library's validity bitmap. */
static int ic_parse_validity(PyObject *value, struct ic_described *out)
{
    struct ic_view *view = &out->view;
    unsigned long long address = 0;
    long long bit = 0;
    view->validity_kind = IC_VALIDITY_UNKNOWN;
    if (!value)
        return 0;
    if (value == Py_None) {
        view->validity_kind = IC_VALIDITY_NONE;
        return 0;
    }
    if (PyBytes_Check(value)) {
        Py_ssize_t size = PyBytes_GET_SIZE(value);
        int64_t numel = -1;
        if (ic_view_numel(view, &numel) < 0 || numel != (int64_t)size) {
            PyErr_SetString(PyExc_ValueError,
                            "describe(): 'validity' as bytes has one byte per element");
            return IC_EPROBE;
        }
        out->validity_bytes = malloc(size > 0 ? (size_t)size : 1);
        if (!out->validity_bytes) {
            PyErr_NoMemory();
            return IC_EPROBE;
        }
        memcpy(out->validity_bytes, PyBytes_AS_STRING(value), (size_t)size);
        view->validity_kind = IC_VALIDITY_BYTES;
        view->validity = (uintptr_t)out->validity_bytes;
        return 0;
    }
    if (!PyTuple_Check(value) || !PyArg_ParseTuple(value, "KL", &address, &bit) || bit < 0 ||
        address == 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "describe(): 'validity' must be None, bytes (one per element) or "
                        "(address, bit offset), a non-zero address and an offset >= 0");
        return IC_EPROBE;
    }
    view->validity_kind = IC_VALIDITY_BITMAP;
    view->validity = (uintptr_t)address;
    view->validity_bit = (int64_t)bit;
    return 0;
}

int ic_probe_describe(struct ic_probe *probe, PyObject *array, struct ic_described *ret,
                      struct ic_py_exc *exc)
{
    PyObject *desc = NULL;
    PyObject *value; /* borrowed from desc */
    struct ic_described out;
    int rc = IC_EPROBE;

    memset(&out, 0, sizeof(out));
    out.view.dtype = IC_DTYPE_INVALID;
    desc = PyObject_CallMethod(probe->module, "describe", "O", array);
    if (!desc)
        goto done;
    if (!PyDict_Check(desc)) {
        PyErr_Format(PyExc_TypeError, "describe() returned %.80s, not a dict",
                     Py_TYPE(desc)->tp_name);
        goto done;
    }
    value = PyDict_GetItemString(desc, "dtype");
    /* None: the library's own API cannot name the dtype (dtype_name stays ""). */
    if (!value || (value != Py_None &&
                   ic_py_str_copy(value, out.dtype_name, sizeof(out.dtype_name)) < 0)) {
        PyErr_SetString(PyExc_ValueError, "describe(): 'dtype' must be a str or None");
        goto done;
    }
    if (ic_dtype_from_name(out.dtype_name, &out.view.dtype) == 0)
        out.view.itemsize = ic_dtype_info(out.view.dtype)->itemsize;
    if (ic_parse_device(PyDict_GetItemString(desc, "device"), &out.view) < 0)
        goto done;

    if ((value = PyDict_GetItemString(desc, "buffer"))) {
        int64_t keep_id = out.view.device_id;
        int32_t keep_type = out.view.device_type;
        if (ic_describe_from_buffer(value, &out) < 0)
            goto done;
        out.view.device_id = keep_id;
        out.view.device_type = keep_type;
    } else {
        if ((value = PyDict_GetItemString(desc, "bytes"))) {
            if (ic_describe_from_bytes(value, &out) < 0)
                goto done;
        } else {
            value = PyDict_GetItemString(desc, "data");
            if (!value || !PyLong_Check(value)) {
                PyErr_SetString(PyExc_ValueError, "describe(): 'data' must be an int");
                goto done;
            }
            out.view.data = (uintptr_t)PyLong_AsUnsignedLongLongMask(value);
            out.pointer_known = true;
        }
        value = PyDict_GetItemString(desc, "shape");
        if (!value || ic_parse_int_sequence(value, out.view.shape, &out.view.ndim, "shape") < 0)
            goto done;
        value = PyDict_GetItemString(desc, "strides");
        int nstrides = 0;
        if (value && value != Py_None && out.pointer_known) {
            if (ic_parse_int_sequence(value, out.view.strides, &nstrides, "strides") < 0)
                goto done;
            if (nstrides != out.view.ndim) {
                PyErr_SetString(PyExc_ValueError, "describe(): strides and shape differ in length");
                goto done;
            }
        } else if (out.view.itemsize > 0 && ic_view_set_c_strides(&out.view) < 0) {
            PyErr_SetString(PyExc_OverflowError, "describe(): array too large");
            goto done;
        }
        value = PyDict_GetItemString(desc, "readonly");
        if (value && value != Py_None) {
            out.readonly_known = true;
            out.view.readonly = PyObject_IsTrue(value) == 1;
        }
    }
    out.view.readonly_known = out.readonly_known;
    if (ic_parse_validity(PyDict_GetItemString(desc, "validity"), &out) < 0)
        goto done;
    *ret = out;
    memset(&out, 0, sizeof(out));
    rc = 0;

done:
    if (rc < 0)
        ic_py_fetch(exc);
    ic_described_release(&out);
    Py_XDECREF(desc);
    return rc;
}

void ic_described_release(struct ic_described *described)
{
    if (described->holds_buffer) {
        PyBuffer_Release(&described->buffer);
        described->holds_buffer = false;
    }
    free(described->bytes);
    described->bytes = NULL;
    free(described->validity_bytes);
    described->validity_bytes = NULL;
}

PyObject *ic_probe_export(struct ic_probe *probe, PyObject *array, enum ic_protocol protocol,
                          struct ic_py_exc *exc)
{
    /* export() is optional: without it the array offers its protocols itself. */
    if (!PyObject_HasAttrString(probe->module, "export"))
        return Py_NewRef(array);
    PyObject *obj = PyObject_CallMethod(probe->module, "export", "Os", array,
                                        ic_protocol_id(protocol));
    if (!obj)
        ic_py_fetch(exc);
    return obj;
}

/* The keywords a consumer-keyword variant passes to consume(), as from_dlpack takes them:
 * copy=True/False/None, or device= the case's device ("cpu", "cuda:0"), which the probe turns
 * into its library's device object. New reference; NULL with an exception set on failure;
 * an empty dict for every other variant. */
static PyObject *ic_consume_keywords(const struct ic_case *c)
{
    char device[32];
    switch (c->variant) {
    case IC_VARIANT_FROM_COPY:
        return Py_BuildValue("{s:O}", "copy", Py_True);
    case IC_VARIANT_FROM_NO_COPY:
        return Py_BuildValue("{s:O}", "copy", Py_False);
    case IC_VARIANT_FROM_COPY_NONE:
        return Py_BuildValue("{s:O}", "copy", Py_None);
    case IC_VARIANT_FROM_C_API:
        return Py_BuildValue("{s:O}", "c_api", Py_True);
    case IC_VARIANT_FROM_DEVICE:
        if (c->device.kind == IC_KIND_CPU)
            snprintf(device, sizeof(device), "cpu");
        else
            snprintf(device, sizeof(device), "%s:%d", ic_device_kind_name(c->device.kind),
                     (int)c->device.id);
        return Py_BuildValue("{s:s}", "device", device);
    default:
        return PyDict_New();
    }
}

PyObject *ic_probe_consume(struct ic_probe *probe, PyObject *obj, const struct ic_case *c,
                           struct ic_py_exc *exc)
{
    PyObject *array = NULL, *consume = NULL, *args = NULL;
    PyObject *keywords = ic_consume_keywords(c);
    if (keywords)
        consume = PyObject_GetAttrString(probe->module, "consume");
    if (consume)
        args = Py_BuildValue("(Oss)", obj, ic_protocol_id(c->protocol), ic_dtype_name(c->dtype));
    if (args)
        array = PyObject_Call(consume, args, keywords);
    if (!array)
        ic_py_fetch(exc);
    Py_XDECREF(args);
    Py_XDECREF(consume);
    Py_XDECREF(keywords);
    return array;
}

/* The load() info's "compute" dict (borrowed), or NULL. */
static PyObject *ic_compute_info(const struct ic_probe *probe)
{
    PyObject *info = probe->info ? PyDict_GetItemString(probe->info, "compute") : NULL;
    return info && PyDict_Check(info) ? info : NULL;
}

void ic_probe_compute_call(const struct ic_probe *probe, char *ret, size_t size)
{
    PyObject *info = ic_compute_info(probe);
    PyObject *call = info ? PyDict_GetItemString(info, "call") : NULL; /* borrowed */
    const char *text = call && PyUnicode_Check(call) ? PyUnicode_AsUTF8(call) : NULL;
    ret[0] = '\0';
    if (text)
        ic_text_copy(ret, size, text, strlen(text));
    PyErr_Clear();
}

int ic_probe_compute(struct ic_probe *probe, PyObject *y, enum ic_dtype dtype, PyObject **ret,
                     char *why, size_t size, struct ic_py_exc *exc)
{
    *ret = NULL;
    why[0] = '\0';
    if (!PyObject_HasAttrString(probe->module, "compute"))
        return IC_ENOTFOUND;
    /* A dtype the library has no operation for is the probe's declaration, read before the
     * call, so that an exception of compute() is always the library's. */
    PyObject *info = ic_compute_info(probe);
    PyObject *missing = info ? PyDict_GetItemString(info, "missing") : NULL; /* borrowed */
    PyObject *reason = missing && PyDict_Check(missing)
                           ? PyDict_GetItemString(missing, ic_dtype_name(dtype))
                           : NULL; /* borrowed */
    if (reason) {
        const char *text = PyUnicode_Check(reason) ? PyUnicode_AsUTF8(reason) : NULL;
        if (!text)
            text = "its probe gives no reason";
        ic_text_copy(why, size, text, strlen(text));
        PyErr_Clear();
        return IC_EUNSUPPORTED;
    }
    PyErr_Clear();
    *ret = PyObject_CallMethod(probe->module, "compute", "O", y);
    if (!*ret) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    return 0;
}

bool ic_probe_has(const struct ic_probe *probe, const char *name)
{
    return probe->module && PyObject_HasAttrString(probe->module, name);
}

/* The multi-index as the tuple of ints probes receive. New reference or NULL (exception). */
static PyObject *ic_index_tuple(const int64_t *index, int ndim)
{
    PyObject *tuple = PyTuple_New(ndim);
    for (int i = 0; tuple && i < ndim; i++) {
        PyObject *item = PyLong_FromLongLong((long long)index[i]);
        if (!item)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

static bool ic_is_python_scalar(PyObject *obj)
{
    return PyBool_Check(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) ||
           PyComplex_CheckExact(obj);
}

int ic_probe_read(struct ic_probe *probe, PyObject *x, const int64_t *index, int ndim,
                  PyObject **ret, struct ic_py_exc *exc)
{
    *ret = NULL;
    if (!ic_probe_has(probe, "read"))
        return IC_ENOTFOUND;
    PyObject *where = ic_index_tuple(index, ndim);
    PyObject *value = where ? PyObject_CallMethod(probe->module, "read", "OO", x, where) : NULL;
    if (value && !ic_is_python_scalar(value)) {
        PyErr_Format(PyExc_TypeError,
                     "the %s probe's read() gave a %.80s, not a Python bool, int, float or "
                     "complex",
                     probe->name, Py_TYPE(value)->tp_name);
        Py_CLEAR(value);
    }
    Py_XDECREF(where);
    if (!value) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    *ret = value;
    return 0;
}

int ic_probe_write(struct ic_probe *probe, PyObject *x, const int64_t *index, int ndim,
                   PyObject *value, struct ic_py_exc *exc)
{
    if (!ic_probe_has(probe, "write"))
        return IC_ENOTFOUND;
    PyObject *where = ic_index_tuple(index, ndim);
    PyObject *done =
        where ? PyObject_CallMethod(probe->module, "write", "OOO", x, where, value) : NULL;
    Py_XDECREF(where);
    if (!done) {
        ic_py_fetch(exc);
        return IC_EPROBE;
    }
    Py_DECREF(done);
    return 0;
}
