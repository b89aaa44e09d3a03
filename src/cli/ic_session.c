#include "ic_session.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ic_config.h"
#include "ic_paths.h"
#include "ic_error.h"
#include "ic_layout.h"
#include "ic_gpu.h"
#include "ic_python.h"

/* <this program's folder>/python3, when there is one: pip installs interopcheck into the
 * bin/ of the environment it builds for. The folder's own path, not the link's target, since
 * a virtual environment's python is a link out of it and decides sys.prefix from its path. */
static bool ic_python_beside_program(char *out, size_t size)
{
    const char *dir = ic_paths_program_dir();
    snprintf(out, size, "%s/python3", dir);
    return dir[0] && access(out, X_OK) == 0;
}

static int ic_resolve_python(const struct ic_options *opts, char *out, size_t size, char *err,
                             size_t err_size)
{
    const char *choice = opts->python;
    const char *origin = "--python";
    char joined[4096];
    const char *venv = getenv("VIRTUAL_ENV");
    if (!choice && venv && venv[0]) {
        snprintf(joined, sizeof(joined), "%s/bin/python", venv);
        choice = joined;
        origin = "$VIRTUAL_ENV";
    }
    if (!choice && ic_paths_installed() && ic_python_beside_program(joined, sizeof(joined))) {
        choice = joined;
        origin = "the environment interopcheck is installed in";
    }
    if (!choice) {
        choice = IC_BUILD_PYTHON;
        origin = "the build";
    }
    struct stat st;
    if (stat(choice, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(out, size, "%s/bin/python", choice);
    } else {
        snprintf(out, size, "%s", choice);
    }
    if (access(out, X_OK) != 0) {
        snprintf(err, err_size,
                 "no Python interpreter at '%s' (from %s): pass --python with the bin/python of "
                 "the environment to test, or run scripts/setup",
                 out, origin);
        return IC_EENV;
    }
    /* Keep the venv's own path (not the symlink's target): it decides sys.prefix. */
    if (out[0] != '/') {
        char cwd[2048];
        char relative[4096];
        snprintf(relative, sizeof(relative), "%s", out);
        if (getcwd(cwd, sizeof(cwd)))
            snprintf(out, size, "%s/%s", cwd, relative);
    }
    return 0;
}

static int ic_add_dir(struct ic_session *session, const char *dir, char *err, size_t err_size)
{
    char resolved[PATH_MAX];
    if (!realpath(dir, resolved)) {
        snprintf(err, err_size, "probe directory '%s': %s", dir, strerror(errno));
        return IC_EENV;
    }
    /* A directory named twice (INTEROPCHECK_PROBE_PATH and --probe-dir) is read once. */
    for (int i = 0; i < session->ndirs; i++) {
        if (strcmp(session->dirs[i], resolved) == 0)
            return 0;
    }
    if (session->ndirs == session->dirs_capacity) {
        int grown = session->dirs_capacity ? 2 * session->dirs_capacity : 8;
        char **more = realloc(session->dirs, (size_t)grown * sizeof(*more));
        if (!more)
            return IC_ENOMEM;
        session->dirs = more;
        session->dirs_capacity = grown;
    }
    session->dirs[session->ndirs] = strdup(resolved);
    if (!session->dirs[session->ndirs])
        return IC_ENOMEM;
    session->ndirs++;
    return 0;
}

/* INTEROPCHECK_CACHE_DIR, which the workers inherit: where probes keep what they compiled
 * (JAX's compilation cache), so that a worker started after a crash, the other workers and the
 * next run load it instead of compiling again. Set by the user (empty: no cache) it is left as
 * it is; otherwise $XDG_CACHE_HOME/interopcheck, else ~/.cache/interopcheck. The probe makes
 * the directory; without HOME there is no cache. */
static void ic_session_set_cache_dir(void)
{
    char dir[PATH_MAX];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (getenv("INTEROPCHECK_CACHE_DIR"))
        return;
    if (xdg && xdg[0] == '/')
        snprintf(dir, sizeof(dir), "%s/interopcheck", xdg);
    else if (home && home[0] == '/')
        snprintf(dir, sizeof(dir), "%s/.cache/interopcheck", home);
    else
        return;
    setenv("INTEROPCHECK_CACHE_DIR", dir, 0);
}

/* --size: the layouts here and, through INTEROPCHECK_SIZE, in every worker (which reads it
 * at start, in ic_main.c). Without --size the variable is removed, so that one a
 * user left set cannot make the workers disagree with the supervisor. */
static int ic_session_set_size(int64_t size, char *err, size_t err_size)
{
    char text[32];
    if (size == 0)
        return unsetenv("INTEROPCHECK_SIZE") < 0 ? IC_EENV : 0;
    snprintf(text, sizeof(text), "%lld", (long long)size);
    if (ic_layout_set_size(size) < 0 || setenv("INTEROPCHECK_SIZE", text, 1) < 0) {
        snprintf(err, err_size, "--size %s cannot be used", text);
        return IC_EUSAGE;
    }
    return 0;
}

static void ic_session_find_devices(struct ic_devices *devices)
{
    struct ic_cuda *cuda = ic_gpu();
    memset(devices, 0, sizeof(*devices));
    devices->available = 1u << IC_KIND_CPU;
    snprintf(devices->detail[IC_KIND_CPU], sizeof(devices->detail[IC_KIND_CPU]), "the host");
    if (cuda && ic_cuda_state(cuda) == IC_CUDA_READY)
        devices->available |= 1u << IC_KIND_CUDA;
    snprintf(devices->detail[IC_KIND_CUDA], sizeof(devices->detail[IC_KIND_CUDA]), "%s",
             cuda ? ic_cuda_reason(cuda) : "out of memory while opening the CUDA driver");
}

int ic_session_open(struct ic_session *session, const struct ic_options *opts, char *err,
                    size_t err_size)
{
    int rc;
    memset(session, 0, sizeof(*session));
    session->opts = opts;

    rc = ic_resolve_python(opts, session->python, sizeof(session->python), err, err_size);
    if (rc < 0)
        goto fail;
    rc = ic_py_check_interpreter(session->python, session->python_version,
                                 sizeof(session->python_version), err, err_size);
    if (rc < 0)
        goto fail;
    ssize_t n = readlink("/proc/self/exe", session->self_exe, sizeof(session->self_exe) - 1);
    if (n <= 0) {
        snprintf(err, err_size, "cannot find this program's path: %s", strerror(errno));
        rc = IC_EENV;
        goto fail;
    }
    session->self_exe[n] = '\0';

    rc = ic_add_dir(session, ic_paths_probe_dir(), err, err_size);
    const char *path = getenv("INTEROPCHECK_PROBE_PATH");
    if (rc == 0 && path && path[0]) {
        char *copy = strdup(path);
        if (!copy) {
            rc = IC_ENOMEM;
            goto fail;
        }
        for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && rc == 0;
             dir = strtok_r(NULL, ":", &save))
            rc = ic_add_dir(session, dir, err, err_size);
        free(copy);
    }
    for (int i = 0; rc == 0 && i < opts->nprobe_dirs; i++)
        rc = ic_add_dir(session, opts->probe_dirs[i], err, err_size);
    if (rc < 0)
        goto fail;
    rc = ic_catalog_scan(&session->catalog, (const char *const *)session->dirs, session->ndirs, err,
                         err_size);
    if (rc < 0)
        goto fail;

    ic_session_find_devices(&session->devices);
    ic_session_set_cache_dir();
    rc = ic_session_set_size(opts->size, err, err_size);
    if (rc < 0)
        goto fail;

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    session->jobs = opts->jobs > 0 ? opts->jobs : (cpus > 0 ? (int)cpus : 1);
    /* TERM=dumb: a terminal without cursor control, where \r and erase codes would pile up. */
    const char *term = getenv("TERM");
    bool live = isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
    session->progress = opts->quiet ? IC_PROGRESS_NONE
                        : live      ? IC_PROGRESS_LIVE
                                    : IC_PROGRESS_LINES;
    session->last_status = ic_wall_s(); /* a plain line first after one interval */
    /* INTEROPCHECK_COPIES=0: every worker imports its libraries itself (src/run/README.md),
     * for a library that misbehaves in a copy of a process that loaded it, and to compare. */
    const char *copies = getenv("INTEROPCHECK_COPIES");
    struct ic_supervisor_config config = {
        .no_copies = copies && strcmp(copies, "0") == 0,
        .self_exe = session->self_exe,
        .python = session->python,
        .jobs = session->jobs,
        .case_timeout_s = opts->timeout_s,
        .load_timeout_s = opts->import_timeout_s,
        .seed = opts->seed,
    };
    rc = ic_pool_create(&config, &session->catalog, &session->pool);
    if (rc < 0) {
        snprintf(err, err_size, "%s", ic_strerror(rc));
        goto fail;
    }
    return 0;

fail:
    ic_session_close(session);
    return rc;
}

double ic_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool ic_session_status_due(const struct ic_session *session, bool force)
{
    double interval = session->progress == IC_PROGRESS_LIVE ? 0.1 : IC_PROGRESS_LINE_INTERVAL_S;
    return session->progress != IC_PROGRESS_NONE &&
           (force || ic_wall_s() - session->last_status >= interval);
}

void ic_session_status(struct ic_session *session, bool force, const char *fmt, ...)
{
    if (!ic_session_status_due(session, force))
        return;
    session->last_status = ic_wall_s();
    va_list ap;
    va_start(ap, fmt);
    fputs(session->progress == IC_PROGRESS_LIVE ? "\r\033[K" : "interopcheck: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (session->progress == IC_PROGRESS_LINES)
        fputc('\n', stderr);
    fflush(stderr);
}

void ic_session_status_clear(struct ic_session *session)
{
    if (session->progress == IC_PROGRESS_LIVE)
        fputs("\r\033[K", stderr);
}

static void ic_discover_progress(void *context, const struct ic_library *lib,
                                 enum ic_discover_step step)
{
    struct ic_session *session = context;
    if (step == IC_DISCOVER_NEXT)
        ic_session_status(session, false, "importing %s ...", lib->name);
    if (session->between && session->catalog.order_count > 0)
        session->between(session->between_context, lib, step);
}

int ic_session_discover(struct ic_session *session, const struct ic_libset *wanted, bool prewarm)
{
    int rc = ic_pool_discover(session->pool, wanted, prewarm, ic_discover_progress, session);
    ic_session_status_clear(session);
    return rc;
}

void ic_session_close(struct ic_session *session)
{
    ic_pool_destroy(session->pool);
    session->pool = NULL;
    ic_catalog_release(&session->catalog);
    for (int i = 0; i < session->ndirs; i++)
        free(session->dirs[i]);
    free(session->dirs);
    session->dirs = NULL;
    session->ndirs = session->dirs_capacity = 0;
}

cJSON *ic_session_tool_json(void)
{
    cJSON *tool = cJSON_CreateObject();
    cJSON *build = tool ? cJSON_AddObjectToObject(tool, "build") : NULL;
    if (!build || !cJSON_AddStringToObject(tool, "name", "interopcheck") ||
        !cJSON_AddStringToObject(tool, "version", IC_VERSION) ||
        !cJSON_AddStringToObject(build, "dlpack_header_version", IC_DLPACK_VERSION) ||
        !cJSON_AddStringToObject(build, "dlpack_header", IC_DLPACK_HEADER) ||
        !cJSON_AddStringToObject(build, "python", IC_BUILD_PYTHON_VERSION) ||
        !cJSON_AddStringToObject(build, "python_executable", IC_BUILD_PYTHON) ||
        !cJSON_AddStringToObject(build, "compiler", IC_COMPILER) ||
        !cJSON_AddStringToObject(build, "build_type", IC_BUILD_TYPE)) {
        cJSON_Delete(tool);
        return NULL;
    }
    return tool;
}

cJSON *ic_session_python_json(const struct ic_session *session)
{
    cJSON *python = cJSON_CreateObject();
    if (!python || !cJSON_AddStringToObject(python, "executable", session->python) ||
        !cJSON_AddStringToObject(python, "version", session->python_version)) {
        cJSON_Delete(python);
        return NULL;
    }
    /* What the embedded interpreter put on sys.path from PYTHONPATH (ic_python.h). */
    const char *pythonpath = getenv("PYTHONPATH");
    if (pythonpath && pythonpath[0]) {
        cJSON *entries = cJSON_AddArrayToObject(python, "pythonpath");
        char *copy = strdup(pythonpath);
        bool ok = entries && copy;
        for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; ok && dir;
             dir = strtok_r(NULL, ":", &save))
            ok = cJSON_AddItemToArray(entries, cJSON_CreateString(dir));
        free(copy);
        if (!ok) {
            cJSON_Delete(python);
            return NULL;
        }
    }
    return python;
}
