#include "ic_supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ic_crash.h"
#include "ic_error.h"
#include "ic_ipc.h"
#include "ic_json.h"

extern char **environ;

#define IC_MAX_JOBS 64
/* Enough to keep faulthandler's Python stack when a library's own crash handler prints its
 * C backtrace after it. */
#define IC_TAIL_MAX 16384

struct ic_proc {
    pid_t pid; /* 0: no process */
    int fd;    /* the worker's message socket */
    int out_fd; /* the libraries' stdout and stderr, merged */
    struct ic_linebuf in;
    char tail[IC_TAIL_MAX + 1];
    size_t tail_len;
    uint64_t loaded; /* catalog indexes the worker has imported */

    bool busy;
    size_t case_index;
    bool began;
    double deadline;
    int pending[IC_MAX_LIBRARIES]; /* libraries the current case still imports, in order */
    int npending;
};

struct ic_pool {
    struct ic_supervisor_config config;
    struct ic_catalog *catalog;
    struct ic_proc procs[IC_MAX_JOBS];
    int nprocs;
};

static double ic_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *ic_signal_name(int sig, char *buf, size_t size)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGPIPE, "SIGPIPE"}, {SIGTRAP, "SIGTRAP"},
                 {SIGSYS, "SIGSYS"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].sig == sig)
            return names[i].name;
    }
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

/* --- Processes ------------------------------------------------------------------------------ */

static void ic_proc_keep_output(struct ic_proc *p, const char *data, size_t n)
{
    if (n >= IC_TAIL_MAX) {
        memcpy(p->tail, data + n - IC_TAIL_MAX, IC_TAIL_MAX);
        p->tail_len = IC_TAIL_MAX;
    } else {
        if (p->tail_len + n > IC_TAIL_MAX) {
            size_t drop = p->tail_len + n - IC_TAIL_MAX;
            memmove(p->tail, p->tail + drop, p->tail_len - drop);
            p->tail_len -= drop;
        }
        memcpy(p->tail + p->tail_len, data, n);
        p->tail_len += n;
    }
    p->tail[p->tail_len] = '\0';
}

static void ic_proc_drain_output(struct ic_proc *p)
{
    char chunk[IC_TAIL_MAX];
    for (;;) {
        ssize_t n = read(p->out_fd, chunk, sizeof(chunk));
        if (n > 0) {
            ic_proc_keep_output(p, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EAGAIN (non-blocking) or end of file */
    }
}

static int ic_proc_spawn(struct ic_pool *pool, struct ic_proc *p)
{
    int sv[2] = {-1, -1}, out[2] = {-1, -1}, child_fd = -1;
    posix_spawn_file_actions_t actions;
    int rc;

    memset(p, 0, sizeof(*p));
    p->fd = p->out_fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(out, O_CLOEXEC) < 0)
        goto fail;
    /* The worker finds its socket at fd 3; keep the source above it so dup2 always copies
     * (and so clears close-on-exec). */
    child_fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    if (child_fd < 0)
        goto fail;

    char *argv[] = {(char *)pool->config.self_exe,
                    "--worker-fd",
                    "3",
                    "--python",
                    (char *)pool->config.python,
                    "--probekit",
                    pool->catalog->kit_path,
                    NULL};
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    posix_spawn_file_actions_adddup2(&actions, child_fd, 3);
    rc = posix_spawn(&p->pid, pool->config.self_exe, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        errno = rc;
        p->pid = 0;
        goto fail;
    }
    close(sv[1]);
    close(child_fd);
    close(out[1]);
    p->fd = sv[0];
    p->out_fd = out[0];
    fcntl(p->out_fd, F_SETFL, fcntl(p->out_fd, F_GETFL) | O_NONBLOCK);
    return 0;

fail:
    fprintf(stderr, "interopcheck: cannot start a worker process: %s\n", strerror(errno));
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (out[i] >= 0)
            close(out[i]);
    }
    if (child_fd >= 0)
        close(child_fd);
    p->fd = p->out_fd = -1;
    return IC_ECHILD;
}

static void ic_proc_close_fds(struct ic_proc *p)
{
    if (p->fd >= 0)
        close(p->fd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    p->fd = p->out_fd = -1;
    ic_linebuf_release(&p->in);
}

/* Reaps a worker that closed its socket; writes how it ended into `how`. */
static void ic_proc_reap(struct ic_proc *p, char *how, size_t size)
{
    int status = 0;
    ic_proc_drain_output(p);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        char buf[32];
        snprintf(how, size, "%s", ic_signal_name(WTERMSIG(status), buf, sizeof(buf)));
    } else if (WIFEXITED(status)) {
        snprintf(how, size, "exit status %d", WEXITSTATUS(status));
    } else {
        snprintf(how, size, "an unknown status");
    }
    ic_proc_close_fds(p);
    p->pid = 0;
}

static void ic_proc_kill(struct ic_proc *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    ic_proc_close_fds(p);
    p->pid = 0;
}

/* Sends a hung worker SIGABRT, which faulthandler answers with the Python stack of every
 * thread before the process dies, and waits up to a second for that output. */
static void ic_proc_abort(struct ic_proc *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGABRT);
    double deadline = ic_clock_s() + 1.0;
    while (ic_clock_s() < deadline) {
        struct pollfd out = {.fd = p->out_fd, .events = POLLIN};
        if (poll(&out, 1, 50) > 0)
            ic_proc_drain_output(p);
        if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
            ic_proc_drain_output(p);
            ic_proc_close_fds(p);
            p->pid = 0;
            return;
        }
    }
}

/* Asks a worker to quit, and kills it if it does not within a second. */
static void ic_proc_stop(struct ic_proc *p)
{
    if (p->pid <= 0)
        return;
    cJSON *quit = cJSON_CreateObject();
    if (quit && cJSON_AddStringToObject(quit, "op", "quit"))
        ic_ipc_send(p->fd, quit);
    cJSON_Delete(quit);
    close(p->fd);
    p->fd = -1;
    for (int i = 0; i < 100; i++) {
        if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
            ic_proc_close_fds(p);
            p->pid = 0;
            return;
        }
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    ic_proc_kill(p);
}

/* Waits for one message from a single worker. 1: *ret_msg is set; 0: the deadline passed;
 * IC_ECHILD: the worker died (reaped; `how` says how). */
static int ic_proc_next(struct ic_proc *p, double deadline, cJSON **ret_msg, char *how,
                        size_t how_size)
{
    for (;;) {
        int error = 0;
        cJSON *msg = ic_linebuf_next(&p->in, &error);
        if (msg) {
            *ret_msg = msg;
            return 1;
        }
        if (error) {
            ic_proc_kill(p);
            snprintf(how, how_size, "a malformed message");
            return IC_ECHILD;
        }
        double left = deadline - ic_clock_s();
        if (left <= 0)
            return 0;
        struct pollfd fds[2] = {{.fd = p->fd, .events = POLLIN}, {.fd = p->out_fd, .events = POLLIN}};
        int n = poll(fds, 2, (int)(left * 1000) + 1);
        if (n < 0 && errno != EINTR)
            return IC_EIO;
        if (fds[1].revents)
            ic_proc_drain_output(p);
        if (fds[0].revents) {
            int got = ic_linebuf_fill(&p->in, p->fd);
            if (got <= 0) {
                ic_proc_reap(p, how, how_size);
                return IC_ECHILD;
            }
        }
    }
}

/* The worker's last output, flattened to one line for a diagnostic. The Python stack that
 * faulthandler wrote when the worker died is left out: the diagnostic names the call it
 * shows, and the library's own last words are what a reader needs besides. */
static void ic_proc_tail_text(const struct ic_proc *p, char *buf, size_t size)
{
    size_t end = p->tail_len;
    for (const char *at = p->tail; (at = strstr(at, "Fatal Python error: ")) != NULL; at++)
        end = (size_t)(at - p->tail);
    size_t start = end > 600 ? end - 600 : 0;
    size_t used = 0;
    for (size_t i = start; i < end && used + 1 < size; i++) {
        char ch = p->tail[i];
        buf[used++] = (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
    }
    buf[used] = '\0';
    while (used > 0 && buf[used - 1] == ' ')
        buf[--used] = '\0';
}

/* --- Pool ----------------------------------------------------------------------------------- */

int ic_pool_create(const struct ic_supervisor_config *config, struct ic_catalog *catalog,
                   struct ic_pool **ret)
{
    struct ic_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return IC_ENOMEM;
    pool->config = *config;
    pool->catalog = catalog;
    pool->nprocs = config->jobs < 1 ? 1 : config->jobs > IC_MAX_JOBS ? IC_MAX_JOBS : config->jobs;
    for (int i = 0; i < IC_MAX_JOBS; i++)
        pool->procs[i].fd = pool->procs[i].out_fd = -1;
    /* A worker that dies while we write to it must not kill the supervisor. */
    signal(SIGPIPE, SIG_IGN);
    *ret = pool;
    return 0;
}

void ic_pool_destroy(struct ic_pool *pool)
{
    if (!pool)
        return;
    for (int i = 0; i < IC_MAX_JOBS; i++)
        ic_proc_stop(&pool->procs[i]);
    free(pool);
}

static int ic_send_load(struct ic_proc *p, const struct ic_library *lib)
{
    cJSON *msg = cJSON_CreateObject();
    int rc = IC_ENOMEM;
    if (msg && cJSON_AddStringToObject(msg, "op", "load") &&
        cJSON_AddStringToObject(msg, "probe", lib->name) &&
        cJSON_AddStringToObject(msg, "path", lib->path))
        rc = ic_ipc_send(p->fd, msg);
    cJSON_Delete(msg);
    return rc;
}

enum ic_load_result {
    IC_LOAD_OK,
    IC_LOAD_NOT_INSTALLED,
    IC_LOAD_IMPORT_ERROR,
    IC_LOAD_DIED,
    IC_LOAD_TIMEOUT,
};

/* Loads library `index` into worker `p` and waits for the answer. On IC_LOAD_OK the catalog
 * entry gets the probe's info; otherwise `why` says what happened. */
static enum ic_load_result ic_pool_load(struct ic_pool *pool, struct ic_proc *p, int index,
                                        char *why, size_t why_size)
{
    struct ic_library *lib = &pool->catalog->libs[index];
    char how[64];
    cJSON *msg = NULL;

    if (p->pid == 0 && ic_proc_spawn(pool, p) < 0) {
        snprintf(why, why_size, "no worker process could be started");
        return IC_LOAD_DIED;
    }
    if (ic_send_load(p, lib) < 0) {
        ic_proc_reap(p, how, sizeof(how));
        snprintf(why, why_size, "the worker ended (%s) before the import", how);
        return IC_LOAD_DIED;
    }
    double deadline = ic_clock_s() + pool->config.load_timeout_s;
    for (;;) {
        int rc = ic_proc_next(p, deadline, &msg, how, sizeof(how));
        if (rc == 0) {
            ic_proc_kill(p);
            snprintf(why, why_size, "importing it took longer than %.0f s", pool->config.load_timeout_s);
            return IC_LOAD_TIMEOUT;
        }
        if (rc < 0) {
            char tail[700];
            ic_proc_tail_text(p, tail, sizeof(tail));
            snprintf(why, why_size, "the worker died with %s while importing it%s%s", how,
                     tail[0] ? "; last output: " : "", tail);
            return IC_LOAD_DIED;
        }
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(msg, "ev");
        const cJSON *probe = cJSON_GetObjectItemCaseSensitive(msg, "probe");
        if (cJSON_IsString(ev) && strcmp(ev->valuestring, "loaded") == 0 &&
            cJSON_IsString(probe) && strcmp(probe->valuestring, lib->name) == 0)
            break;
        cJSON_Delete(msg);
        msg = NULL;
    }
    enum ic_load_result result;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(msg, "ms");
    lib->load_ms = cJSON_IsNumber(ms) ? ms->valuedouble : 0;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "ok"))) {
        p->loaded |= 1ULL << index;
        ic_library_set_info(lib, cJSON_DetachItemFromObjectCaseSensitive(msg, "info"));
        result = IC_LOAD_OK;
    } else {
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(error, "type");
        const cJSON *message = cJSON_GetObjectItemCaseSensitive(error, "message");
        snprintf(why, why_size, "%s: %s", cJSON_IsString(type) ? type->valuestring : "Error",
                 cJSON_IsString(message) ? message->valuestring : "");
        result = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(error, "not_installed"))
                     ? IC_LOAD_NOT_INSTALLED
                     : IC_LOAD_IMPORT_ERROR;
    }
    cJSON_Delete(msg);
    return result;
}

static void ic_mark_failed(struct ic_library *lib, enum ic_library_state state, const char *why)
{
    lib->state = state;
    snprintf(lib->error, sizeof(lib->error), "%s", why);
}

/* A fresh worker with the libraries of the current order imported, in that order. */
static int ic_pool_restore(struct ic_pool *pool, struct ic_proc *p)
{
    char why[1024];
    struct ic_catalog *catalog = pool->catalog;
    ic_proc_kill(p);
    for (int i = 0; i < catalog->order_count; i++) {
        int index = catalog->order[i];
        if (ic_pool_load(pool, p, index, why, sizeof(why)) != IC_LOAD_OK) {
            /* It imported a moment ago: an import that is not repeatable is a crash too. */
            ic_mark_failed(&catalog->libs[index], IC_LIBRARY_IMPORT_CRASH, why);
            memmove(&catalog->order[i], &catalog->order[i + 1],
                    sizeof(int) * (size_t)(catalog->order_count - i - 1));
            catalog->order_count--;
            return ic_pool_restore(pool, p);
        }
    }
    return 0;
}

int ic_pool_discover(struct ic_pool *pool, uint64_t wanted, ic_discover_progress_fn progress,
                     void *context)
{
    struct ic_catalog *catalog = pool->catalog;
    struct ic_proc *p = &pool->procs[0];
    char why[1024], alone_why[1024];

    catalog->order_count = 0;
    for (int index = 0; index < catalog->count; index++) {
        struct ic_library *lib = &catalog->libs[index];
        if (!(wanted & (1ULL << index)) || lib->state != IC_LIBRARY_FOUND)
            continue;
        if (progress)
            progress(context, lib);
        enum ic_load_result result = ic_pool_load(pool, p, index, why, sizeof(why));
        if (result == IC_LOAD_OK) {
            catalog->order[catalog->order_count++] = index;
            continue;
        }
        if (result == IC_LOAD_IMPORT_ERROR || result == IC_LOAD_NOT_INSTALLED) {
            ic_mark_failed(lib,
                           result == IC_LOAD_NOT_INSTALLED ? IC_LIBRARY_NOT_INSTALLED
                                                           : IC_LIBRARY_IMPORT_ERROR,
                           why);
            continue;
        }
        if (catalog->order_count == 0) {
            ic_mark_failed(lib, IC_LIBRARY_IMPORT_CRASH, why);
            continue;
        }
        /* It died after others were imported: try it alone, first in a fresh worker. */
        ic_proc_kill(p);
        result = ic_pool_load(pool, p, index, alone_why, sizeof(alone_why));
        if (result == IC_LOAD_IMPORT_ERROR || result == IC_LOAD_NOT_INSTALLED) {
            ic_mark_failed(lib,
                           result == IC_LOAD_NOT_INSTALLED ? IC_LIBRARY_NOT_INSTALLED
                                                           : IC_LIBRARY_IMPORT_ERROR,
                           alone_why);
            ic_pool_restore(pool, p);
            continue;
        }
        if (result != IC_LOAD_OK) {
            ic_mark_failed(lib, IC_LIBRARY_IMPORT_CRASH, alone_why);
            ic_pool_restore(pool, p);
            continue;
        }
        uint64_t earlier = 0;
        for (int i = 0; i < catalog->order_count; i++)
            earlier |= 1ULL << catalog->order[i];
        lib->load_before = earlier;
        memmove(&catalog->order[1], &catalog->order[0], sizeof(int) * (size_t)catalog->order_count);
        catalog->order[0] = index;
        catalog->order_count++;
        /* The others go in after it; if one of them now fails, the two cannot share a process
         * at all, and the newcomer is the one left out. */
        bool together = true;
        for (int i = 1; i < catalog->order_count && together; i++) {
            if (ic_pool_load(pool, p, catalog->order[i], alone_why, sizeof(alone_why)) !=
                IC_LOAD_OK) {
                together = false;
                snprintf(lib->error, sizeof(lib->error),
                         "imports alone, but not in one process with %s (%.900s)",
                         catalog->libs[catalog->order[i]].name, alone_why);
            }
        }
        if (!together) {
            lib->state = IC_LIBRARY_IMPORT_CRASH;
            memmove(&catalog->order[0], &catalog->order[1],
                    sizeof(int) * (size_t)(catalog->order_count - 1));
            catalog->order_count--;
            ic_pool_restore(pool, p);
        } else {
            snprintf(lib->error, sizeof(lib->error),
                     "crashed when imported after other libraries (%.900s); imported first instead",
                     why);
        }
    }
    return 0;
}

/* --- Running cases ------------------------------------------------------------------------- */

static int ic_order_position(const struct ic_catalog *catalog, int index)
{
    for (int i = 0; i < catalog->order_count; i++) {
        if (catalog->order[i] == index)
            return i;
    }
    return catalog->order_count + index;
}

/* True when worker `p` cannot import `needed` any more because one of them must come before
 * a library it already has. */
static bool ic_proc_conflicts(const struct ic_pool *pool, const struct ic_proc *p, uint64_t needed)
{
    for (int i = 0; i < pool->catalog->count; i++) {
        if ((needed & (1ULL << i)) && !(p->loaded & (1ULL << i)) &&
            (pool->catalog->libs[i].load_before & p->loaded))
            return true;
    }
    return false;
}

/* Adds the "load" list of the libraries in `needed` that `p` lacks, in the pool's import
 * order, and remembers them as pending. */
static int ic_add_load_list(struct ic_pool *pool, struct ic_proc *p, cJSON *msg, uint64_t needed)
{
    const struct ic_catalog *catalog = pool->catalog;
    cJSON *load = cJSON_AddArrayToObject(msg, "load");
    if (!load)
        return IC_ENOMEM;
    int pending[IC_MAX_LIBRARIES], count = 0;
    for (int i = 0; i < catalog->count; i++) {
        if ((needed & (1ULL << i)) && !(p->loaded & (1ULL << i)))
            pending[count++] = i;
    }
    for (int a = 0; a < count; a++) {
        for (int b = a + 1; b < count; b++) {
            if (ic_order_position(catalog, pending[b]) < ic_order_position(catalog, pending[a])) {
                int t = pending[a];
                pending[a] = pending[b];
                pending[b] = t;
            }
        }
    }
    for (int i = 0; i < count; i++) {
        cJSON *item = cJSON_CreateObject();
        if (!item || !cJSON_AddItemToArray(load, item) ||
            !cJSON_AddStringToObject(item, "probe", catalog->libs[pending[i]].name) ||
            !cJSON_AddStringToObject(item, "path", catalog->libs[pending[i]].path))
            return IC_ENOMEM;
    }
    memcpy(p->pending, pending, sizeof(int) * (size_t)count);
    p->npending = count;
    return 0;
}

static uint64_t ic_needed(const struct ic_pool *pool, const char *producer, const char *consumer)
{
    uint64_t needed = 0;
    int a = ic_catalog_find(pool->catalog, producer);
    int b = ic_catalog_find(pool->catalog, consumer);
    if (a >= 0)
        needed |= 1ULL << a;
    if (b >= 0)
        needed |= 1ULL << b;
    return needed;
}

/* One reproducer: sends the request to `p` and waits for its answer. */
static void ic_reproduce_one(struct ic_pool *pool, struct ic_proc *p, const cJSON *request,
                             size_t index, ic_script_fn on_script, void *context)
{
    char how[64], error[800];
    struct ic_case c;
    const char *id = ic_json_string(request, "case");
    if (!id || ic_case_parse_id(id, &c) < 0) {
        on_script(context, index, NULL, "the example case id is not valid");
        return;
    }
    uint64_t needed = ic_needed(pool, c.producer, c.consumer);
    if (p->pid && ic_proc_conflicts(pool, p, needed))
        ic_proc_stop(p);
    if (p->pid == 0 && ic_proc_spawn(pool, p) < 0) {
        on_script(context, index, NULL, "no worker process could be started");
        return;
    }
    cJSON *msg = cJSON_Duplicate(request, true);
    if (!msg || !cJSON_AddStringToObject(msg, "op", "repro") ||
        ic_add_load_list(pool, p, msg, needed) < 0 || ic_ipc_send(p->fd, msg) < 0) {
        cJSON_Delete(msg);
        ic_proc_kill(p);
        on_script(context, index, NULL, "the request could not be sent to a worker");
        return;
    }
    cJSON_Delete(msg);
    double deadline = ic_clock_s() + pool->config.load_timeout_s + pool->config.case_timeout_s;
    for (;;) {
        cJSON *answer = NULL;
        int rc = ic_proc_next(p, deadline, &answer, how, sizeof(how));
        if (rc <= 0) {
            if (rc == 0)
                ic_proc_kill(p);
            snprintf(error, sizeof(error), "the worker %s while writing the reproducer",
                     rc == 0 ? "timed out" : "died");
            p->loaded = 0;
            on_script(context, index, NULL, error);
            return;
        }
        const char *ev = ic_json_string(answer, "ev");
        const char *probe = ic_json_string(answer, "probe");
        if (ev && strcmp(ev, "loaded") == 0 && probe &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok"))) {
            int lib = ic_catalog_find(pool->catalog, probe);
            if (lib >= 0)
                p->loaded |= 1ULL << lib;
        }
        if (ev && strcmp(ev, "repro") == 0) {
            on_script(context, index, ic_json_string(answer, "script"),
                      ic_json_string_or(answer, "error", "no script"));
            cJSON_Delete(answer);
            return;
        }
        cJSON_Delete(answer);
    }
}

int ic_pool_reproduce(struct ic_pool *pool, cJSON *const *requests, size_t count,
                      ic_script_fn on_script, void *context)
{
    struct ic_proc *p = &pool->procs[0];
    for (size_t i = 0; i < count; i++) {
        if (p->busy)
            return IC_EINVAL;
        ic_reproduce_one(pool, p, requests[i], i, on_script, context);
    }
    return 0;
}

static int ic_send_run(struct ic_pool *pool, struct ic_proc *p, const struct ic_case *c,
                       uint64_t needed)
{
    char id[IC_CASE_ID_MAX], seed[32];
    int rc = IC_ENOMEM;
    if (ic_case_format_id(c, id, sizeof(id)) < 0)
        return IC_EINVAL;
    snprintf(seed, sizeof(seed), "%" PRIu64, pool->config.seed);
    cJSON *msg = cJSON_CreateObject();
    if (!msg || !cJSON_AddStringToObject(msg, "op", "run") ||
        !cJSON_AddStringToObject(msg, "case", id) || !cJSON_AddStringToObject(msg, "seed", seed) ||
        ic_add_load_list(pool, p, msg, needed) < 0)
        goto done;
    rc = ic_ipc_send(p->fd, msg);
done:
    cJSON_Delete(msg);
    return rc;
}

/* Ends the worker's case as crash, timeout (charged to the side its Python stack shows at
 * work) or error (the tool's or the environment's). */
static void ic_deliver_failure(struct ic_pool *pool, struct ic_proc *p, const struct ic_case *c,
                               enum ic_outcome outcome, const char *what,
                               ic_result_fn on_result, void *context)
{
    struct ic_result res;
    struct ic_crash_site site;
    char tail[700], where[600] = "";
    memset(&res, 0, sizeof(res));
    ic_proc_tail_text(p, tail, sizeof(tail));
    if (outcome == IC_OUTCOME_ERROR) {
        ic_result_set(&res, outcome, "%s%s%s", what, tail[0] ? "; last output: " : "", tail);
    } else {
        int producer = ic_catalog_find(pool->catalog, c->producer);
        int consumer = ic_catalog_find(pool->catalog, c->consumer);
        ic_crash_locate(p->tail, producer >= 0 ? pool->catalog->libs[producer].path : NULL,
                        consumer >= 0 ? pool->catalog->libs[consumer].path : NULL, &site);
        if (site.probe_call[0])
            snprintf(where, sizeof(where), " in %s (innermost Python frame: %s)", site.probe_call,
                     site.innermost);
        else if (site.innermost[0])
            snprintf(where, sizeof(where), " (innermost Python frame: %s)", site.innermost);
        else if (site.traceback)
            snprintf(where, sizeof(where), " outside Python code (no Python frame was running)");
        ic_result_set_fault(&res, outcome,
                            outcome == IC_OUTCOME_CRASH ? IC_RULE_EXCHANGE_CRASH
                                                        : IC_RULE_EXCHANGE_TIMEOUT,
                            site.side, "%s%s%s%s", what, where, tail[0] ? "; last output: " : "",
                            tail);
    }
    on_result(context, p->case_index, &res);
    p->busy = false;
}

/* Handles one message of a busy worker. Returns true when the case ended. */
static bool ic_handle_message(struct ic_pool *pool, struct ic_proc *p, const cJSON *msg,
                              ic_result_fn on_result, void *context)
{
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(msg, "ev");
    if (!cJSON_IsString(ev))
        return false;
    if (strcmp(ev->valuestring, "loaded") == 0) {
        const cJSON *probe = cJSON_GetObjectItemCaseSensitive(msg, "probe");
        int index = cJSON_IsString(probe) ? ic_catalog_find(pool->catalog, probe->valuestring) : -1;
        if (index >= 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "ok")))
            p->loaded |= 1ULL << index;
        for (int i = 0; i < p->npending; i++) {
            if (p->pending[i] == index) {
                memmove(&p->pending[i], &p->pending[i + 1],
                        sizeof(int) * (size_t)(p->npending - i - 1));
                p->npending--;
                break;
            }
        }
        p->deadline = ic_clock_s() + pool->config.load_timeout_s;
        return false;
    }
    if (strcmp(ev->valuestring, "begin") == 0) {
        p->began = true;
        p->npending = 0;
        p->deadline = ic_clock_s() + pool->config.case_timeout_s;
        return false;
    }
    if (strcmp(ev->valuestring, "end") == 0) {
        struct ic_result res;
        if (ic_result_from_json(cJSON_GetObjectItemCaseSensitive(msg, "result"), &res) < 0) {
            memset(&res, 0, sizeof(res));
            ic_result_set(&res, IC_OUTCOME_ERROR, "the worker sent a malformed result");
        }
        on_result(context, p->case_index, &res);
        p->busy = false;
        return true;
    }
    return false;
}

static const char *ic_proc_importing(const struct ic_pool *pool, const struct ic_proc *p)
{
    return p->npending ? pool->catalog->libs[p->pending[0]].name : "libraries";
}

/* A worker died importing a library after others: the same conflict discovery learns from
 * (ic_pool_discover), met later because this worker imported in another order. The library
 * is ordered before the ones the worker had, so the case can run again. Returns false when
 * the death had nothing to do with order (the library was the first to be imported). */
static bool ic_learn_import_order(struct ic_pool *pool, const struct ic_proc *p)
{
    struct ic_catalog *catalog = pool->catalog;
    if (!p->npending || !p->loaded)
        return false;
    int index = p->pending[0];
    struct ic_library *lib = &catalog->libs[index];
    /* Already known when another worker learned it while this one was importing. */
    lib->load_before |= p->loaded;
    /* Move it before the first library it must precede in the order workers follow. */
    int from = -1, to = -1;
    for (int i = 0; i < catalog->order_count; i++) {
        if (catalog->order[i] == index)
            from = i;
        if (to < 0 && (p->loaded & (1ULL << catalog->order[i])))
            to = i;
    }
    if (from > to && to >= 0) {
        memmove(&catalog->order[to + 1], &catalog->order[to], sizeof(int) * (size_t)(from - to));
        catalog->order[to] = index;
    }
    return true;
}

int ic_pool_run(struct ic_pool *pool, const struct ic_case *cases, size_t count,
                ic_result_fn on_result, void *context)
{
    struct ic_catalog *catalog = pool->catalog;
    size_t next = 0, done = 0;
    char how[64], what[256];
    /* Cases to run again after an import-order conflict was learned (once each). */
    size_t retry[IC_MAX_JOBS], nretry = 0;
    unsigned char *retried = calloc(count ? count : 1, 1);
    if (!retried)
        return IC_ENOMEM;

    while (done < count) {
        /* Hand a case to every idle worker. */
        for (int j = 0; j < pool->nprocs && (next < count || nretry > 0); j++) {
            struct ic_proc *p = &pool->procs[j];
            if (p->busy)
                continue;
            size_t index = nretry > 0 ? retry[--nretry] : next++;
            const struct ic_case *c = &cases[index];
            uint64_t needed = 0;
            int producer = ic_catalog_find(catalog, c->producer);
            int consumer = ic_catalog_find(catalog, c->consumer);
            if (producer >= 0)
                needed |= 1ULL << producer;
            if (consumer >= 0)
                needed |= 1ULL << consumer;
            if (p->pid && ic_proc_conflicts(pool, p, needed))
                ic_proc_stop(p);
            if (p->pid == 0 && ic_proc_spawn(pool, p) < 0) {
                free(retried);
                return IC_ECHILD;
            }
            p->busy = true;
            p->began = false;
            p->case_index = index;
            p->deadline = ic_clock_s() + pool->config.load_timeout_s;
            if (ic_send_run(pool, p, c, needed) < 0) {
                ic_proc_reap(p, how, sizeof(how));
                snprintf(what, sizeof(what), "the worker ended (%s) before the case was sent", how);
                ic_deliver_failure(pool, p, c, IC_OUTCOME_ERROR, what, on_result, context);
                done++;
            }
        }

        /* Wait for the busy ones. */
        struct pollfd fds[2 * IC_MAX_JOBS];
        int owner[2 * IC_MAX_JOBS], nfds = 0;
        double now = ic_clock_s(), wait = 1.0;
        for (int j = 0; j < pool->nprocs; j++) {
            struct ic_proc *p = &pool->procs[j];
            if (!p->busy)
                continue;
            fds[nfds] = (struct pollfd){.fd = p->fd, .events = POLLIN};
            owner[nfds++] = j;
            fds[nfds] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
            owner[nfds++] = j;
            if (p->deadline - now < wait)
                wait = p->deadline - now;
        }
        if (nfds == 0)
            continue;
        int n = poll(fds, (nfds_t)nfds, wait > 0 ? (int)(wait * 1000) + 1 : 0);
        if (n < 0 && errno != EINTR) {
            free(retried);
            return IC_EIO;
        }

        for (int k = 0; k < nfds; k++) {
            struct ic_proc *p = &pool->procs[owner[k]];
            if (!fds[k].revents || !p->busy)
                continue;
            if (k % 2 == 1) {
                ic_proc_drain_output(p);
                continue;
            }
            int got = ic_linebuf_fill(&p->in, p->fd);
            cJSON *msg;
            int error = 0;
            while (p->busy && (msg = ic_linebuf_next(&p->in, &error))) {
                if (ic_handle_message(pool, p, msg, on_result, context))
                    done++;
                cJSON_Delete(msg);
            }
            if (p->busy && (got <= 0 || error)) {
                ic_proc_reap(p, how, sizeof(how));
                if (!p->began && nretry < IC_MAX_JOBS && !retried[p->case_index] &&
                    ic_learn_import_order(pool, p)) {
                    retried[p->case_index] = 1;
                    retry[nretry++] = p->case_index;
                    p->busy = false;
                    p->loaded = 0;
                    continue;
                }
                if (p->began)
                    snprintf(what, sizeof(what), "the worker died with %s during this case", how);
                else
                    snprintf(what, sizeof(what),
                             "the worker died with %s before the case began (importing %s)", how,
                             ic_proc_importing(pool, p));
                ic_deliver_failure(pool, p, &cases[p->case_index],
                                   p->began ? IC_OUTCOME_CRASH : IC_OUTCOME_ERROR, what, on_result,
                                   context);
                p->loaded = 0;
                done++;
            }
        }

        now = ic_clock_s();
        for (int j = 0; j < pool->nprocs; j++) {
            struct ic_proc *p = &pool->procs[j];
            if (!p->busy || now < p->deadline)
                continue;
            if (p->began)
                ic_proc_abort(p); /* its Python stack, for the diagnostic */
            ic_proc_drain_output(p);
            ic_proc_kill(p);
            if (p->began)
                snprintf(what, sizeof(what), "no result after %.0f s: the worker was killed",
                         pool->config.case_timeout_s);
            else
                snprintf(what, sizeof(what), "importing %s took longer than %.0f s",
                         ic_proc_importing(pool, p), pool->config.load_timeout_s);
            ic_deliver_failure(pool, p, &cases[p->case_index],
                               p->began ? IC_OUTCOME_TIMEOUT : IC_OUTCOME_ERROR, what, on_result,
                               context);
            p->loaded = 0;
            done++;
        }
    }
    free(retried);
    return 0;
}
