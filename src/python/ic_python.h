/*
 * ic_python: the embedded CPython interpreter. This module owns interpreter start-up and
 * shut-down, the GIL, and the turning of Python exceptions into C data.
 *
 * Contract
 * - ic_py_init starts the interpreter of one Python environment (a virtual environment or an
 *   installation) through PyConfig, in isolated mode: the user site and the PYTHON*
 *   environment variables are ignored but PYTHONPATH, which is put on sys.path where a plain
 *   `python` of that environment puts it (the user's way to add packages to what is tested;
 *   reports list it); signal handlers are not installed (the supervisor owns signals).
 *   It returns with the GIL released. The interpreter lives until ic_py_finalize.
 * - Code that touches Python objects runs between ic_py_enter() and ic_py_leave(), which
 *   take and drop the GIL. Other modules never call PyGILState_* or PyEval_* themselves.
 * - Exceptions: a Python C-API call that fails leaves an exception pending; the caller turns
 *   it into a `struct ic_py_exc` with ic_py_fetch (which clears it) and decides what it means.
 *   Nothing here prints exceptions.
 * - ic_py_check_interpreter runs before any interpreter exists: it asks the candidate
 *   interpreter for its version in a child process, so a mismatch is an error message, never
 *   a crash inside an incompatible libpython.
 */
#ifndef IC_PYTHON_H
#define IC_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct _object PyObject;

struct ic_py_config {
    const char *python;         /* path of the environment's python executable */
    const char *const *sys_path; /* directories put first on sys.path, NULL-terminated, or NULL */
    /* Python's faulthandler from the start: a fatal signal (and SIGABRT) writes the Python
     * stack of every thread to stderr, which tells a crash report the call that was running. */
    bool faulthandler;
};

/* Checks that `python` exists, runs, and has the major.minor version libpython was built
 * for; writes its full version ("3.13.0") into `version`. On failure writes a message that
 * says what to do into err. IC_EENV on a mismatch or an interpreter that does not run. */
int ic_py_check_interpreter(const char *python, char *version, size_t version_size, char *err,
                            size_t err_size);

/* The "3.13" version interopcheck was built against, and its libpython's full version. */
const char *ic_py_build_version(void);
const char *ic_py_runtime_version(void);

/* Starts the interpreter. On failure writes the reason into err and returns IC_EPYTHON;
 * the process should then exit, since CPython cannot be initialised twice reliably. */
int ic_py_init(const struct ic_py_config *config, char *err, size_t err_size);

/* Installs faulthandler's signal handlers again, in front of whatever a library installed
 * since (paddle installs its own SIGSEGV handler, which hides the Python stack, some time
 * after its import). The library's handler is dropped: a fatal signal dumps the Python stack
 * and kills the process. Where every fatal signal still has the handler faulthandler installed
 * at the last call, nothing is done (the kernel is asked, five calls). GIL held; raises
 * nothing. */
void ic_py_faulthandler_rearm(void);

/* Finalises the interpreter (GIL must not be held). Safe to call when init failed. */
void ic_py_finalize(void);

void ic_py_enter(void);
void ic_py_leave(void);

/* fork(2) with the interpreter told before and after (PyOS_BeforeFork and the AfterFork of
 * each side), so that the child can run Python. Called without the GIL; returns fork's value
 * (the child's pid, 0 in the child, -1 with errno). */
pid_t ic_py_fork(void);

/* As ic_py_fork, but the new process is a grandchild, whose parent (a middle process that
 * only forks) leaves at once: it is then the child of the nearest subreaper ancestor (the
 * supervisor, PR_SET_CHILD_SUBREAPER), not of the caller. In the caller: the grandchild's pid
 * as soon as the middle process has said it, or -1 with errno; the middle may still be ending
 * then (its teardown costs as much as its fork) and is reaped at the next call. In the
 * grandchild: 0, with the interpreter ready as after ic_py_fork; its parent may be the middle
 * for a few milliseconds more, so a grandchild that needs the subreaper as its parent waits
 * for it (ic_worker_become_copy does). */
pid_t ic_py_fork_detached(void);

/* Sets os.environ[name] (and so the C environment), where the interpreter runs: a forked
 * copy of a worker takes its slot's number this way. 0, or IC_EPYTHON. */
int ic_py_setenv(const char *name, const char *value);

/* A fetched Python exception. */
struct ic_py_exc {
    char type[64];      /* qualified class name, e.g. "BufferError" or "jax.errors.JaxRuntimeError" */
    char message[1024]; /* str(exc), truncated */
    char where[256];    /* innermost traceback frame "file:line in func", or "" */
    bool buffer_error;  /* isinstance(exc, BufferError) */
    bool type_error;
    bool value_error;
    bool attribute_error;
    bool not_implemented;
};

/* Moves the pending exception into `exc` and clears it. Returns false (and fills `exc` with
 * an "unknown error" text) when no exception was pending. */
bool ic_py_fetch(struct ic_py_exc *exc);

/* Describes the pending exception in `exc` without clearing it, so that it still reaches
 * the caller's caller (a proxy records a producer's exception, then lets it propagate to the
 * consumer). Returns false when none is pending. */
bool ic_py_peek(struct ic_py_exc *exc);

/* Formats "Type: message" into buf. */
void ic_py_exc_format(const struct ic_py_exc *exc, char *buf, size_t size);

/* Runs the cyclic garbage collector so that deleters of released arrays have run. `full`
 * collects every generation (tens of milliseconds once large libraries are loaded); otherwise
 * only the young generations, where a case's own objects are. */
void ic_py_collect(bool full);

/* Moves every object tracked so far out of the collector's reach (gc.freeze): called after a
 * library is imported, so that a full collection, automatic or ic_py_collect(true), looks at
 * what cases made since, not at the hundreds of thousands of objects the imports left (a
 * third of a second to a second a collection, with the large libraries loaded), and a forked
 * child does not copy the pages a collection would write. What is frozen stays alive, which
 * is what an imported module's objects do anyway. Nothing on a Python without gc.freeze
 * (before 3.7). */
void ic_py_freeze_imports(void);

/* Whether sys.modules holds a module called `name`: importing it would find it done. GIL
 * held; raises nothing. */
bool ic_py_module_imported(const char *name);

/* json.dumps(obj) as a malloc'd string the caller frees; NULL with an exception pending. */
char *ic_py_json_dumps(PyObject *obj);

/* Writes repr(obj), truncated, into buf; "<repr failed>" when repr raises (the exception is
 * cleared). */
void ic_py_repr(PyObject *obj, char *buf, size_t size);

/* A Python scalar of old's type (bool, int, float, complex) that differs from `old` and that
 * every dtype holding `old` holds exactly, also after a trip through float32 (some libraries
 * assign Python ints so): not for a bool, 0 for a nonzero int and 1 for 0, the negation for a
 * nonzero float, 1.0 for a zero one (whose negation compares equal), and likewise for a
 * complex's real part. New reference, or NULL (no exception pending) for any
 * other type. */
PyObject *ic_py_other_scalar(PyObject *old);

/* A weak reference to `obj` (new reference), or NULL, with no exception pending, for an
 * object that takes none. ic_py_weak_alive says whether its object still lives. */
PyObject *ic_py_weak_ref(PyObject *obj);
bool ic_py_weak_alive(PyObject *ref);

/* Copies str `obj` as UTF-8 into buf (truncated). Returns IC_EINVAL when obj is no str. */
int ic_py_str_copy(PyObject *obj, char *buf, size_t size);

#endif
