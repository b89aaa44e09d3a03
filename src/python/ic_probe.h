/*
 * ic_probe: the worker's side of the probes (probes/README.md): loading a probe file and
 * calling its functions. Everything here runs inside a worker process, with the GIL held.
 *
 * Contract
 * - A probe is loaded once per worker from its file, under the module name
 *   interopcheck_probe_<name>; ic_probe_kit_load must run first, so probes can import
 *   _probekit. A probe's failure to load is the library's import error: it is returned as a
 *   fetched exception, and the worker goes on.
 * - Each call returns a new reference (or fills a struct) on success. On failure it returns
 *   NULL / a negative code and moves the Python exception into `exc`; no exception is left
 *   pending. The probe's exceptions are data: the caller decides what they mean.
 * - struct ic_described may hold a buffer or a copy of the array's bytes; release it with
 *   ic_described_release, which is safe on a zeroed or released struct.
 */
#ifndef IC_PROBE_H
#define IC_PROBE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>

#include "ic_case.h"
#include "ic_python.h"
#include "ic_view.h"

struct ic_probe {
    char name[IC_NAME_MAX];
    char path[1024];
    PyObject *module; /* NULL until loaded */
    PyObject *info;   /* the dict load() returned; NULL for a probe only opened (ic_probe_open) */
    /* load() failed because the library itself is not installed: its import raised
     * ModuleNotFoundError for the probe's MODULE (default: the probe's name), not for one of
     * the library's own dependencies. */
    bool not_installed;
};

/* How a consumer's import of one protocol behaves, from its load() info. */
enum ic_readonly_support {
    IC_READONLY_NEVER,  /* the import cannot represent read-only arrays */
    IC_READONLY_BOTH,   /* it marks read-only imports read-only and writable ones writable */
    IC_READONLY_ALWAYS, /* an immutable library: every import is read-only */
};

struct ic_import_traits {
    bool present;   /* the probe declares an import for the protocol */
    bool zero_copy; /* the import promises to share memory */
    bool typed;     /* dtype and shape come from the protocol */
    bool claimed;   /* false: the library does not say it imports so (it is fed all the same) */
    enum ic_readonly_support readonly;
};

/* What describe() said about an array. */
struct ic_described {
    struct ic_view view;
    char dtype_name[32];  /* as the probe spelled it, also when unknown to the tester; "" when
                           * the library cannot name its array's dtype */
    bool pointer_known;   /* false when the probe could only give the bytes */
    bool readonly_known;
    bool holds_buffer;
    Py_buffer buffer;      /* held while the view points into it */
    unsigned char *bytes;  /* malloc'd contents when the probe gave bytes */
    unsigned char *validity_bytes; /* malloc'd, when the probe gave its nulls as bytes */
};

/* Loads `_probekit.py` from `path` as the module `_probekit`. */
int ic_probe_kit_load(const char *path, struct ic_py_exc *exc);

/* Writes the reproducer of one failure with probes/_repro.py (found next to the kit at
 * `kit_path`, loaded once): `failure_json` describes the case and its failed check, `c` is
 * the case, `consumer` NULL for interopcheck's own consumer. Returns the script (malloc'd,
 * the caller frees), or NULL with the reason in `exc`; a script longer than
 * IC_TEXT_SCRIPT_CAP bytes is refused so (ic_text.h: a cut script would not run). */
char *ic_probe_reproducer(const char *kit_path, const char *failure_json, const struct ic_case *c,
                          struct ic_probe *producer, struct ic_probe *consumer,
                          struct ic_py_exc *exc);

/* Imports the probe file without calling its load(), so without importing its library: for
 * what a probe says in text alone (its REPRO description, read by ic_probe_reproducer).
 * probe->module is set, probe->info stays NULL. IC_EPROBE with the reason in `exc`. */
int ic_probe_open(struct ic_probe *probe, const char *name, const char *path,
                  struct ic_py_exc *exc);

/* Imports the probe file and calls its load(), then its warm() where it has one (an exception
 * of warm() is dropped). On success probe->module and probe->info are set and *ret_info_json
 * (malloc'd, the caller frees) holds info as JSON. */
int ic_probe_load(struct ic_probe *probe, const char *name, const char *path,
                  char **ret_info_json, struct ic_py_exc *exc);

/* Drops the probe's references. */
void ic_probe_release(struct ic_probe *probe);

int ic_probe_import_traits(const struct ic_probe *probe, enum ic_protocol protocol,
                           struct ic_import_traits *ret);

/* True when the probe's load() info declares a deviation of its library for `rule` broken by
 * `side`, on this case's protocol, dtype and layout (each filter optional), with a link to the
 * library's own documentation, which goes to ret_link (repaired, cut with ic_text's marker
 * where it does not fit). See probes/README.md, `deviations`. */
bool ic_probe_deviation(const struct ic_probe *probe, enum ic_rule rule, enum ic_side side,
                        const struct ic_case *c, char *ret_link, size_t size);

/* build(data, dtype, ops, readonly): an array of `dtype` from the bytes of `data` (the
 * layout's base), with the layout's ops applied. */
/* `device` is the case's device kind ("cpu", "cuda"); it is passed as device=... only when
 * it is not the CPU, so CPU-only probes need not know the keyword. `valid` (NULL: none) is
 * passed as valid=...: one byte per base element, 0 where the element is to be null. */
PyObject *ic_probe_build(struct ic_probe *probe, PyObject *data, enum ic_dtype dtype,
                         const struct ic_layout_info *layout, bool readonly, PyObject *valid,
                         const char *device, struct ic_py_exc *exc);

/* The nulls variants' valid= (build(), and the reproducer's generate()): a byte per base
 * element of `layout`, 0 for the nulls ic_pattern_is_null picks. New reference, or NULL with
 * an exception set. */
PyObject *ic_probe_valid_bytes(const struct ic_layout_info *layout);

/* stream(x): the stream the library uses for x. IC_ENOTFOUND when the probe has no stream()
 * (no exception is left); IC_EPROBE when it raised (in exc). */
int ic_probe_stream(struct ic_probe *probe, PyObject *array, uintptr_t *ret,
                    struct ic_py_exc *exc);

int ic_probe_describe(struct ic_probe *probe, PyObject *array, struct ic_described *ret,
                      struct ic_py_exc *exc);
void ic_described_release(struct ic_described *described);

PyObject *ic_probe_export(struct ic_probe *probe, PyObject *array, enum ic_protocol protocol,
                          struct ic_py_exc *exc);

/* consume(obj, protocol, dtype, **keywords): the consumer's import of `obj` for case `c`; a
 * consumer-keyword variant (from_copy, from_no_copy, from_copy_none, from_device) passes
 * copy= or device= as from_dlpack takes them, and from_c_api passes c_api=True: import
 * through the library's own DLPack C exchange API table (probes/README.md). New reference, or NULL with
 * what it raised in exc. */
PyObject *ic_probe_consume(struct ic_probe *probe, PyObject *obj, const struct ic_case *c,
                           struct ic_py_exc *exc);

/* compute(y): one operation of the consumer's own library on its import `y`, whose result is
 * a new array holding y's values (probes/README.md). IC_ENOTFOUND when the probe has no
 * compute(); IC_EUNSUPPORTED when its load() info names `dtype` under "compute"/"missing" (the
 * library has no operation for it), with the probe's reason in `why`; in both cases nothing is
 * called and no exception is left. IC_EPROBE when compute() raised (in exc). Else 0 and *ret
 * holds the result (a new reference). */
int ic_probe_compute(struct ic_probe *probe, PyObject *y, enum ic_dtype dtype, PyObject **ret,
                     char *why, size_t size, struct ic_py_exc *exc);

/* The call the probe's load() info gives for compute() ("compute"/"call"), for notes; "" when
 * it names none. */
void ic_probe_compute_call(const struct ic_probe *probe, char *ret, size_t size);

/* read(x, index) and write(x, index, value): one element of an array through its library's
 * own indexing (probes/README.md), for the write-through check. `index` is a multi-index of
 * `ndim` entries in the array's logical shape. Both give IC_ENOTFOUND, calling nothing, when
 * the probe lacks the function, and IC_EPROBE when it raised (in exc). read() must give a
 * Python bool, int, float or complex: anything else is IC_EPROBE with a TypeError in exc.
 * On success *ret (read) is a new reference. */
int ic_probe_read(struct ic_probe *probe, PyObject *x, const int64_t *index, int ndim,
                  PyObject **ret, struct ic_py_exc *exc);
int ic_probe_write(struct ic_probe *probe, PyObject *x, const int64_t *index, int ndim,
                   PyObject *value, struct ic_py_exc *exc);

/* Whether the probe defines the function `name`. */
bool ic_probe_has(const struct ic_probe *probe, const char *name);

/* The layout's ops as the Python list probes receive. New reference or NULL (exception). */
PyObject *ic_layout_ops_to_python(const struct ic_layout_info *layout);

#endif
