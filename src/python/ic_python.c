#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_python.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_text.h"

extern char **environ;

static bool ic_py_started;
static int ic_py_depth;
static PyGILState_STATE ic_py_gil_state;
static char ic_py_build_text[16];

const char *ic_py_build_version(void)
{
    snprintf(ic_py_build_text, sizeof(ic_py_build_text), "%d.%d", PY_MAJOR_VERSION,
             PY_MINOR_VERSION);
    return ic_py_build_text;
}

const char *ic_py_runtime_version(void)
{
    return Py_GetVersion();
}

/* Runs `python -I -S -c ...` and reads the "major.minor.micro" it prints. A child process,
 * because loading an interpreter of another version into this process would crash instead of
 * explaining. -S: the version needs no site-packages, whose .pth files can import modules (a
 * numba one imports importlib.resources: 50 ms against 10 ms without site, before any worker
 * starts). */
static int ic_py_query_version(const char *python, char *version, size_t size, char *err,
                               size_t err_size)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        snprintf(err, err_size, "cannot create a pipe: %s", strerror(errno));
        return IC_EIO;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipefd[0]);
    posix_spawn_file_actions_addclose(&actions, pipefd[1]);
    char *argv[] = {(char *)python,
                    "-I",
                    "-S",
                    "-c",
                    "import sys; print('%d.%d.%d' % sys.version_info[:3])",
                    NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, python, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        snprintf(err, err_size, "cannot run the interpreter '%s': %s", python, strerror(rc));
        return IC_EENV;
    }
    char out[64] = {0};
    size_t used = 0;
    ssize_t n;
    while (used < sizeof(out) - 1 && (n = read(pipefd[0], out + used, sizeof(out) - 1 - used)) > 0)
        used += (size_t)n;
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || used == 0) {
        snprintf(err, err_size, "the interpreter '%s' did not report its version", python);
        return IC_EENV;
    }
    out[strcspn(out, "\r\n")] = '\0';
    snprintf(version, size, "%s", out);
    return 0;
}

int ic_py_check_interpreter(const char *python, char *version_out, size_t version_size,
                            char *err, size_t err_size)
{
    if (access(python, X_OK) != 0) {
        snprintf(err, err_size,
                 "no Python interpreter at '%s' (%s); pass --python with the bin/python of the "
                 "environment to test, or run scripts/setup",
                 python, strerror(errno));
        return IC_EENV;
    }
    char version[64];
    int rc = ic_py_query_version(python, version, sizeof(version), err, err_size);
    if (rc < 0)
        return rc;
    const char *built = ic_py_build_version();
    size_t built_len = strlen(built);
    if (strncmp(version, built, built_len) != 0 || version[built_len] != '.') {
        /* An interopcheck embeds one minor's libpython, so another minor needs another
         * build: say both ways to get one. */
        snprintf(err, err_size,
                 "'%s' is Python %s, but this interopcheck was built against Python %s: use a "
                 "Python %s environment, or get an interopcheck for Python %s: install one into "
                 "that environment ('%s -m pip install PATH-OF-THE-interopcheck-SOURCE') or "
                 "build one ('meson setup build-%s -Dpython=%s && meson compile -C build-%s')",
                 python, version, built, built, version, python, version, python, version);
        return IC_EENV;
    }
    snprintf(version_out, version_size, "%s", version);
    return 0;
}

static void ic_py_status_message(PyStatus status, const char *what, char *err, size_t err_size)
{
    snprintf(err, err_size, "%s: %s%s%s", what, status.func ? status.func : "",
             status.func ? ": " : "", status.err_msg ? status.err_msg : "unknown failure");
}

/* Puts `dir` at *position of sys.path and advances it. GIL held. */
static int ic_py_path_insert(const char *dir, Py_ssize_t *position, char *err, size_t err_size)
{
    PyObject *sys_path = PySys_GetObject("path"); /* borrowed */
    PyObject *entry = PyUnicode_DecodeFSDefault(dir);
    int rc = 0;
    if (!entry || !sys_path || PyList_Insert(sys_path, *position, entry) < 0) {
        PyErr_Clear();
        snprintf(err, err_size, "cannot add '%s' to sys.path", dir);
        rc = IC_EPYTHON;
    } else {
        (*position)++;
    }
    Py_XDECREF(entry);
    return rc;
}

int ic_py_init(const struct ic_py_config *config, char *err, size_t err_size)
{
    PyConfig pyconfig;
    PyStatus status;
    int rc = IC_EPYTHON;
    char *argv[] = {"interopcheck", NULL};

    /* Isolated: the tested environment is chosen by the interpreter's path, never by
     * PYTHONHOME or other PYTHON* settings of the user's shell; PYTHONPATH alone is taken, as a
     * plain python takes it, since users add packages to an environment with it. Signal
     * handlers stay ours. */
    PyConfig_InitIsolatedConfig(&pyconfig);
    pyconfig.faulthandler = config->faulthandler ? 1 : 0;
    pyconfig.install_signal_handlers = 0;
    pyconfig.site_import = 1;
    pyconfig.write_bytecode = 0;

    status = PyConfig_SetBytesString(&pyconfig, &pyconfig.program_name, config->python);
    if (PyStatus_Exception(status)) {
        ic_py_status_message(status, "cannot set the program name", err, err_size);
        goto cleanup;
    }
    /* The executable decides sys.prefix: a virtual environment is found through the
     * pyvenv.cfg next to its bin/python. */
    status = PyConfig_SetBytesString(&pyconfig, &pyconfig.executable, config->python);
    if (PyStatus_Exception(status)) {
        ic_py_status_message(status, "cannot set the executable", err, err_size);
        goto cleanup;
    }
    status = PyConfig_SetBytesArgv(&pyconfig, 1, argv);
    if (PyStatus_Exception(status)) {
        ic_py_status_message(status, "cannot set argv", err, err_size);
        goto cleanup;
    }
    status = Py_InitializeFromConfig(&pyconfig);
    if (PyStatus_Exception(status)) {
        ic_py_status_message(status, "cannot start Python", err, err_size);
        goto cleanup;
    }
    ic_py_started = true;

    /* First the caller's directories, then PYTHONPATH's, in front of the environment's own
     * (where a plain python puts PYTHONPATH: isolated mode ignores the variable). */
    Py_ssize_t position = 0;
    for (const char *const *dir = config->sys_path; dir && *dir; dir++) {
        if (ic_py_path_insert(*dir, &position, err, err_size) < 0)
            goto cleanup;
    }
    const char *pythonpath = getenv("PYTHONPATH");
    char *entries = pythonpath && pythonpath[0] ? strdup(pythonpath) : NULL;
    bool path_ok = entries || !pythonpath || !pythonpath[0];
    if (!path_ok)
        snprintf(err, err_size, "out of memory reading PYTHONPATH");
    for (char *save = NULL, *dir = entries ? strtok_r(entries, ":", &save) : NULL; dir && path_ok;
         dir = strtok_r(NULL, ":", &save))
        path_ok = ic_py_path_insert(dir, &position, err, err_size) == 0;
    free(entries);
    if (!path_ok)
        goto cleanup;
    rc = 0;

cleanup:
    PyConfig_Clear(&pyconfig);
    if (ic_py_started)
        PyEval_SaveThread(); /* hand the GIL back; callers take it with ic_py_enter */
    return rc;
}

void ic_py_finalize(void)
{
    if (!ic_py_started)
        return;
    PyGILState_Ensure();
    Py_FinalizeEx();
    ic_py_started = false;
}

void ic_py_enter(void)
{
    if (ic_py_depth++ == 0)
        ic_py_gil_state = PyGILState_Ensure();
}

void ic_py_leave(void)
{
    if (--ic_py_depth == 0)
        PyGILState_Release(ic_py_gil_state);
}

/* The middle process of the last ic_py_fork_detached, which may still have been ending when
 * it returned: reaped at the next call (a zombie meanwhile). Tearing down a copy of a worker
 * holding every library takes about as long as forking it (15-20 ms), which the caller,
 * discovery's worker between two imports, does not wait for; the next copy comes seconds
 * later. A child of any fork of ours starts with none: it is not that process's parent, and
 * the pid could one day name a child of its own, which reaping would take from whoever waits
 * for it. */
static pid_t ic_py_middle;

pid_t ic_py_fork(void)
{
    ic_py_enter();
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0) {
        ic_py_middle = 0;
        PyOS_AfterFork_Child();
    } else
        PyOS_AfterFork_Parent();
    ic_py_leave();
    return pid;
}

pid_t ic_py_fork_detached(void)
{
    int report[2];
    while (ic_py_middle > 0 && waitpid(ic_py_middle, NULL, 0) < 0 && errno == EINTR)
        ;
    ic_py_middle = 0;
    if (pipe2(report, O_CLOEXEC) < 0)
        return -1;
    ic_py_enter();
    PyOS_BeforeFork();
    pid_t middle = fork();
    if (middle == 0) {
        /* The middle process runs no Python: it forks, says the pid and leaves. */
        pid_t grandchild = fork();
        if (grandchild == 0) {
            close(report[0]);
            close(report[1]);
            ic_py_middle = 0;
            PyOS_AfterFork_Child();
            ic_py_leave();
            return 0;
        }
        ssize_t written = write(report[1], &grandchild, sizeof(grandchild));
        _exit(grandchild > 0 && written == (ssize_t)sizeof(grandchild) ? 0 : 1);
    }
    int saved = errno;
    PyOS_AfterFork_Parent();
    ic_py_leave();
    close(report[1]);
    pid_t grandchild = -1;
    if (middle > 0) {
        ssize_t got;
        do
            got = read(report[0], &grandchild, sizeof(grandchild));
        while (got < 0 && errno == EINTR);
        if (got != (ssize_t)sizeof(grandchild))
            grandchild = -1;
        if (grandchild > 0) {
            ic_py_middle = middle;
        } else {
            while (waitpid(middle, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        saved = grandchild > 0 ? 0 : ECHILD;
    }
    close(report[0]);
    errno = saved;
    return grandchild;
}

int ic_py_setenv(const char *name, const char *value)
{
    int rc = IC_EPYTHON;
    ic_py_enter();
    PyObject *os = PyImport_ImportModule("os");
    PyObject *environ_map = os ? PyObject_GetAttrString(os, "environ") : NULL;
    PyObject *key = PyUnicode_FromString(name);
    PyObject *text = PyUnicode_FromString(value);
    if (environ_map && key && text && PyObject_SetItem(environ_map, key, text) == 0)
        rc = 0;
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(key);
    Py_XDECREF(environ_map);
    Py_XDECREF(os);
    ic_py_leave();
    return rc;
}

static void ic_py_type_name(PyObject *type, char *buf, size_t size)
{
    PyObject *module = NULL, *qualname = NULL;
    const char *module_text = NULL, *name_text = NULL;

    module = PyObject_GetAttrString(type, "__module__");
    qualname = PyObject_GetAttrString(type, "__qualname__");
    if (module && PyUnicode_Check(module))
        module_text = PyUnicode_AsUTF8(module);
    if (qualname && PyUnicode_Check(qualname))
        name_text = PyUnicode_AsUTF8(qualname);
    PyErr_Clear();
    if (!name_text)
        name_text = ((PyTypeObject *)type)->tp_name;
    if (module_text && strcmp(module_text, "builtins") != 0)
        snprintf(buf, size, "%s.%s", module_text, name_text);
    else
        snprintf(buf, size, "%s", name_text);
    Py_XDECREF(module);
    Py_XDECREF(qualname);
}

static void ic_py_traceback_where(PyObject *exc, char *buf, size_t size)
{
    PyObject *tb = NULL, *next = NULL, *frame = NULL, *code = NULL, *file = NULL, *func = NULL,
             *line = NULL;

    buf[0] = '\0';
    tb = PyObject_GetAttrString(exc, "__traceback__");
    while (tb && tb != Py_None) {
        next = PyObject_GetAttrString(tb, "tb_next");
        if (!next || next == Py_None)
            break;
        Py_SETREF(tb, next);
        next = NULL;
    }
    if (tb && tb != Py_None) {
        frame = PyObject_GetAttrString(tb, "tb_frame");
        line = PyObject_GetAttrString(tb, "tb_lineno");
        code = frame ? PyObject_GetAttrString(frame, "f_code") : NULL;
        file = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
        func = code ? PyObject_GetAttrString(code, "co_name") : NULL;
        if (file && func && line && PyUnicode_Check(file) && PyUnicode_Check(func))
            snprintf(buf, size, "%s:%ld in %s", PyUnicode_AsUTF8(file), PyLong_AsLong(line),
                     PyUnicode_AsUTF8(func));
    }
    PyErr_Clear();
    Py_XDECREF(tb);
    Py_XDECREF(next);
    Py_XDECREF(frame);
    Py_XDECREF(code);
    Py_XDECREF(file);
    Py_XDECREF(func);
    Py_XDECREF(line);
}

bool ic_py_fetch(struct ic_py_exc *exc)
{
    PyObject *value = NULL, *text = NULL, *bytes = NULL;

    memset(exc, 0, sizeof(*exc));
#if PY_VERSION_HEX >= 0x030C0000
    value = PyErr_GetRaisedException();
#else
    PyObject *type = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
#endif
    if (!value) {
        snprintf(exc->type, sizeof(exc->type), "UnknownError");
        snprintf(exc->message, sizeof(exc->message), "no Python exception was set");
        return false;
    }
    PyObject *type_obj = (PyObject *)Py_TYPE(value); /* borrowed */
    ic_py_type_name(type_obj, exc->type, sizeof(exc->type));
    ic_utf8_repair_in_place(exc->type, sizeof(exc->type));
    exc->buffer_error = PyErr_GivenExceptionMatches(value, PyExc_BufferError);
    exc->type_error = PyErr_GivenExceptionMatches(value, PyExc_TypeError);
    exc->value_error = PyErr_GivenExceptionMatches(value, PyExc_ValueError);
    exc->attribute_error = PyErr_GivenExceptionMatches(value, PyExc_AttributeError);
    exc->not_implemented = PyErr_GivenExceptionMatches(value, PyExc_NotImplementedError);

    text = PyObject_Str(value);
    /* "surrogatepass" and a counted copy: a lone surrogate or a NUL in the message, which
     * PyUnicode_AsUTF8 refuses, shows as U+FFFD instead of emptying the message. */
    if (text && PyUnicode_Check(text))
        bytes = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (bytes)
        ic_text_copy(exc->message, sizeof(exc->message), PyBytes_AS_STRING(bytes),
                     (size_t)PyBytes_GET_SIZE(bytes));
    PyErr_Clear();
    ic_py_traceback_where(value, exc->where, sizeof(exc->where));
    ic_utf8_repair_in_place(exc->where, sizeof(exc->where));
    Py_XDECREF(bytes);
    Py_XDECREF(text);
    Py_DECREF(value);
    return true;
}

bool ic_py_peek(struct ic_py_exc *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *value = PyErr_GetRaisedException();
    if (!value) {
        memset(exc, 0, sizeof(*exc));
        return false;
    }
    PyErr_SetRaisedException(Py_NewRef(value));
    bool found = ic_py_fetch(exc);
    PyErr_SetRaisedException(value);
    return found;
#else
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    if (!type) {
        memset(exc, 0, sizeof(*exc));
        return false;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XINCREF(type);
    Py_XINCREF(value);
    Py_XINCREF(tb);
    PyErr_Restore(type, value, tb);
    bool found = ic_py_fetch(exc);
    PyErr_Restore(type, value, tb);
    return found;
#endif
}

void ic_py_exc_format(const struct ic_py_exc *exc, char *buf, size_t size)
{
    if (exc->message[0])
        snprintf(buf, size, "%s: %s", exc->type, exc->message);
    else
        snprintf(buf, size, "%s", exc->type);
}

/* Calls gc.<method>(generation), or gc.<method>() for a negative generation; a method the
 * running Python lacks, or one that raises, does nothing. */
static void ic_py_gc_call(const char *method, int generation)
{
    PyObject *gc = NULL, *result = NULL;

    gc = PyImport_ImportModule("gc");
    if (gc && PyObject_HasAttrString(gc, method))
        result = generation < 0 ? PyObject_CallMethod(gc, method, NULL)
                                : PyObject_CallMethod(gc, method, "i", generation);
    if (!result)
        PyErr_Clear();
    Py_XDECREF(result);
    Py_XDECREF(gc);
}

void ic_py_collect(bool full)
{
    ic_py_gc_call("collect", full ? -1 : 1);
}

void ic_py_freeze_imports(void)
{
    ic_py_gc_call("freeze", -1);
}

bool ic_py_module_imported(const char *name)
{
    /* Borrowed references, and no exception: PyDict_GetItemString swallows its own. A None
     * entry is an import that was blocked or failed, not a module. */
    PyObject *module = PyDict_GetItemString(PyImport_GetModuleDict(), name);
    return module && module != Py_None;
}

char *ic_py_json_dumps(PyObject *obj)
{
    PyObject *json = NULL, *dumps = NULL, *kwargs = NULL, *text = NULL, *args = NULL;
    PyObject *bytes = NULL;
    char *copy = NULL;

    json = PyImport_ImportModule("json");
    if (!json)
        goto cleanup;
    dumps = PyObject_GetAttrString(json, "dumps");
    args = PyTuple_Pack(1, obj);
    kwargs = Py_BuildValue("{s:O,s:O}", "default", (PyObject *)&PyUnicode_Type, "ensure_ascii",
                           Py_False);
    if (!dumps || !args || !kwargs)
        goto cleanup;
    text = PyObject_Call(dumps, args, kwargs);
    if (!text)
        goto cleanup;
    /* A library's text may hold lone surrogates, which neither UTF-8 nor a strict JSON reader
     * takes (json.dumps would write them as "\ud800"): encode them as they are and let the
     * UTF-8 repair turn them into U+FFFD, which can grow each byte to three. */
    bytes = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
    if (!bytes)
        goto cleanup;
    size_t len = (size_t)PyBytes_GET_SIZE(bytes);
    copy = malloc(3 * len + 1);
    if (!copy) {
        PyErr_NoMemory();
        goto cleanup;
    }
    ic_text_copy(copy, 3 * len + 1, PyBytes_AS_STRING(bytes), len);

cleanup:
    Py_XDECREF(bytes);
    Py_XDECREF(json);
    Py_XDECREF(dumps);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(text);
    return copy;
}

void ic_py_repr(PyObject *obj, char *buf, size_t size)
{
    PyObject *text = PyObject_Repr(obj);
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    if (utf8) {
        snprintf(buf, size, "%s", utf8);
    } else {
        PyErr_Clear();
        snprintf(buf, size, "<repr failed>");
    }
    Py_XDECREF(text);
}

static double ic_other_double(double old)
{
    return old != 0.0 ? -old : 1.0;
}

PyObject *ic_py_other_scalar(PyObject *old)
{
    PyObject *ret = NULL;
    if (PyBool_Check(old)) {
        ret = PyBool_FromLong(old != Py_True);
    } else if (PyLong_Check(old)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(old, &overflow);
        ret = PyLong_FromLong(v == 0 && !overflow ? 1 : 0);
    } else if (PyFloat_Check(old)) {
        ret = PyFloat_FromDouble(ic_other_double(PyFloat_AsDouble(old)));
    } else if (PyComplex_Check(old)) {
        Py_complex z = PyComplex_AsCComplex(old);
        ret = PyComplex_FromDoubles(ic_other_double(z.real), z.imag);
    }
    if (!ret)
        PyErr_Clear();
    return ret;
}

PyObject *ic_py_weak_ref(PyObject *obj)
{
    PyObject *ref = obj ? PyWeakref_NewRef(obj, NULL) : NULL;
    if (!ref)
        PyErr_Clear();
    return ref;
}

bool ic_py_weak_alive(PyObject *ref)
{
    if (!ref)
        return false;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *target = NULL;
    int alive = PyWeakref_GetRef(ref, &target);
    Py_XDECREF(target);
    if (alive < 0)
        PyErr_Clear();
    return alive > 0;
#else
    /* Before 3.13 the borrowed form is the only one; Py_None is a dead reference. */
    return PyWeakref_GetObject(ref) != Py_None;
#endif
}

int ic_py_str_copy(PyObject *obj, char *buf, size_t size)
{
    if (!obj || !PyUnicode_Check(obj))
        return IC_EINVAL;
    const char *utf8 = PyUnicode_AsUTF8(obj);
    if (!utf8) {
        PyErr_Clear();
        return IC_EINVAL;
    }
    snprintf(buf, size, "%s", utf8);
    return 0;
}

/* The fatal signals faulthandler takes (CPython's own list), and the handler each had when it
 * last installed them: a case whose library left them alone needs no rearming. */
static const int ic_fatal_signals[] = {SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL};
#define IC_FATAL_SIGNALS (sizeof(ic_fatal_signals) / sizeof(ic_fatal_signals[0]))
static struct sigaction ic_fatal_armed[IC_FATAL_SIGNALS];
static bool ic_fatal_known;

/* Whether every fatal signal still has the handler faulthandler installed last. */
static bool ic_fatal_handlers_kept(void)
{
    for (size_t i = 0; ic_fatal_known && i < IC_FATAL_SIGNALS; i++) {
        struct sigaction now;
        if (sigaction(ic_fatal_signals[i], NULL, &now) != 0 ||
            now.sa_sigaction != ic_fatal_armed[i].sa_sigaction ||
            now.sa_flags != ic_fatal_armed[i].sa_flags)
            return false;
    }
    return ic_fatal_known;
}

/* Notes the handlers faulthandler just installed. */
static void ic_fatal_handlers_note(void)
{
    ic_fatal_known = true;
    for (size_t i = 0; i < IC_FATAL_SIGNALS; i++) {
        if (sigaction(ic_fatal_signals[i], NULL, &ic_fatal_armed[i]) != 0)
            ic_fatal_known = false;
    }
}

void ic_py_faulthandler_rearm(void)
{
    /* Five sigaction queries cost less than the two Python calls below (ten sigaction calls
     * and the interpreter's own work), which ran before every case. */
    if (ic_fatal_handlers_kept())
        return;
    /* enable() alone does nothing while faulthandler counts itself enabled, even when a
     * library has since replaced its handlers: disable() first, then enable() installs them
     * again in front. */
    PyObject *module = PyImport_ImportModule("faulthandler");
    PyObject *off = module ? PyObject_CallMethod(module, "disable", NULL) : NULL;
    PyObject *args = PyTuple_New(0);
    PyObject *kwargs = Py_BuildValue("{s:O}", "all_threads", Py_True);
    PyObject *enable = module ? PyObject_GetAttrString(module, "enable") : NULL;
    PyObject *on = off && args && kwargs && enable ? PyObject_Call(enable, args, kwargs) : NULL;
    if (!on)
        PyErr_Clear();
    else
        ic_fatal_handlers_note();
    Py_XDECREF(on);
    Py_XDECREF(enable);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(off);
    Py_XDECREF(module);
}
