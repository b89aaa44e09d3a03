#include "ic_supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ic_crash.h"
#include "ic_error.h"
#include "ic_ipc.h"
#include "ic_json.h"
#include "ic_text.h"

extern char **environ;

/* Enough to keep faulthandler's Python stack when a library's own crash handler prints its
 * C backtrace after it. */
#define IC_TAIL_MAX 16384

/* The bytes of a worker's last output a crash's diagnostic quotes (ic_proc_tail_text). */
#define IC_TAIL_QUOTE_MAX 600

/* Cases a worker holds beyond the one it runs (ic_pool_queue). One was not enough: a case the
 * consumer refuses takes tens of microseconds, less than the supervisor, sharing the cores
 * with the workers, takes to be scheduled, read the "end" and send the next; each worker then
 * waited on the supervisor between cases for a quarter of the case phase. Deep enough, too,
 * that the supervisor can let messages gather (ic_pool_coalesce). Deeper, a crash hands more
 * cases back (they run again elsewhere) and a run's last cases spread less evenly, both by a
 * few cases' time. */
#define IC_PIPELINE_DEPTH 16

/* The longest the supervisor lets the workers' messages gather (ic_pool_coalesce). */
#define IC_COALESCE_MAX_S 1e-3

/* A lean worker (ic_case_lean) is for a pair whose imports discovery measured at most
 * IC_LEAN_LOAD_MS_MAX (each library's own share, in discovery's order), where the template holds
 * at least IC_LEAN_TEMPLATE_MIN_MIB resident; it must reach its case within IC_LEAN_IMPORT_MAX_S,
 * or it is given up for a copy. A crash in a child of a worker holding every library of --all
 * (1.3 GiB) costs 60-80 ms: the fork, the child's first steps on copied pages, the exit
 * (py_ctypes -> mlx: 44 crashes in 3.4 s). In a child of a worker holding that pair alone it
 * costs 4-5 ms (0.2 s for the same 55 cases), so a pair that imports in a tenth of a second
 * pays for its own worker from its second crash; below a template of half a GiB, a fork is
 * cheap already. */
#define IC_LEAN_LOAD_MS_MAX      250.0
#define IC_LEAN_TEMPLATE_MIN_MIB 512.0
#define IC_LEAN_IMPORT_MAX_S     0.5

struct ic_proc {
    pid_t pid;  /* 0: no process; the worker leads its own process group */
    int fd;     /* the worker's message socket */
    int out_fd; /* the libraries' stdout and stderr, merged */
    int ev_fd;  /* children of the worker killed by a signal (pid, signal as int32) */
    struct ic_framebuf in;
    char tail[IC_TAIL_MAX + 1];
    size_t tail_len;
    /* Bytes of output kept since this process started (ic_proc_spawn clears them), and that
     * count at the last case mark it wrote (ic_ipc.h): what the case in flight (or the import)
     * wrote starts there (ic_proc_case_output). */
    unsigned long long out_total, case_out_from;
    size_t mark_matched;     /* bytes of a case mark read so far, held back from the tail */
    struct ic_libset loaded; /* catalog indexes the worker has imported (owned) */
    /* What this process has done before (ic_case_warm): a hash of each producer's build
     * (producer, dtype, layout) and each consumer's import (consumer, protocol, dtype,
     * layout), in an open-addressed table of warm_capacity slots (0: empty). Kept from
     * process to process of the slot, emptied at each start. */
    uint64_t *warm;
    size_t warm_count, warm_capacity;

    unsigned long long seq; /* of the request in flight */
    char case_id[IC_CASE_ID_MAX];
    bool busy;
    size_t case_index;
    bool began;
    double deadline;
    int pending[2]; /* libraries the current case still imports, in order */
    int npending;
    pid_t child_pid; /* a child the current case started that died by a signal, or 0 */
    int child_signal;
    /* Statistics (struct ic_pool_stats): the libraries this slot's processes ever imported,
     * how many processes it started, and the current request's times. */
    struct ic_libset ever_loaded;
    unsigned spawns;
    double sent_at, began_at, import_s;
    bool ran_in_process; /* ran a case itself: no longer fit to fork isolated cases */
    bool lean; /* started afresh for isolated cases of pairs cheap to import (ic_case_lean): it
                  holds only their libraries, runs no case itself, and forks small children */
    bool forked;         /* the failure being delivered is of a forked copy of the worker */
    bool current_forked; /* the case in flight runs in a forked copy */
    pid_t case_pid;      /* the process running the case in flight (its "begin"), or 0 */
    /* The export the case's consumer was handed breaks this harmful rule of the producer's
     * (its "flawed" message), with what broke it; IC_RULE_NONE: no such export. */
    enum ic_rule flaw_rule;
    char flaw_text[IC_DIAG_MSG_MAX];
    /* Pipelining: the next cases, in order, sent while the current one runs, so that the
     * worker starts each the moment the one before ends, however late the supervisor reads
     * its messages. The first becomes current on the current's "end"; a worker that dies
     * first hands them back to be run elsewhere. */
    struct ic_queued_case {
        unsigned long long seq;
        size_t index;
        char id[IC_CASE_ID_MAX];
    } queued[IC_PIPELINE_DEPTH];
    int nqueued;
};

struct ic_pool {
    struct ic_supervisor_config config;
    struct ic_catalog *catalog;
    struct ic_proc *procs; /* nprocs of them */
    int nprocs;
    /* The template (ic_pool_make_template): a copy of discovery's worker made once discovery
     * is over, holding every import of the order and having run nothing else; it runs no
     * case. A worker started after that is a copy of it (ic_proc_copy) instead of a process
     * importing the libraries again. pid 0: none (or it failed, and workers are spawned). */
    struct ic_proc template;
    double template_mib; /* its resident memory when made: what a fork of it copies and drops */
    bool subreaper; /* PR_SET_CHILD_SUBREAPER took: copies are our children */
    struct pollfd *fds; /* 3 per worker: its socket, its output, its child events */
    int *owner;         /* the worker of each entry of fds */
    unsigned long long next_seq;
    /* Pairs whose case crashed or hung over a protocol: a byte per (pair key, protocol), the
     * key as ic_order_by_pair makes it; NULL until the first. */
    unsigned char *isolated_pairs;
    struct ic_pool_stats stats;
    /* Libraries a lean worker could not import within IC_LEAN_IMPORT_MAX_S, or died importing:
     * no pair of theirs gets a lean worker again in this pool. */
    struct ic_libset lean_heavy;
    /* What starting a worker costs besides its imports (the interpreter and the probe kit):
     * measured on the last start that loaded a library (ic_pool_load). */
    double start_s;
    /* Prewarming (ic_pool_discover with prewarm set and two slots or more): the second slot's
     * worker imports, on the core discovery leaves idle, the libraries discovery's worker is
     * about to import, in the same order, so that it starts the run with discovery's imports
     * instead of making them then. The loads sent to it, in order: catalog index and request
     * number of each, kept until discovery ends (ic_prewarm_finish checks them). */
    /* Cases run while discovery imports (ic_pool_spin_off). In the pool that discovers: the
     * worker of the pool spun off it, which is no stray of this one's to reap (0: none), and
     * whether a spin-off failed (none is tried again). In a pool spun off: the catalog it
     * runs from, its own copy; it starts no process and reaps none but its worker; `ending`
     * is set from the discovering thread (ic_pool_end). */
    pid_t spun_off_pids[2]; /* a spin-off can be made while the last one still runs */
    bool spin_off_failed;
    bool spun_off;
    struct ic_catalog *own_catalog;
    _Atomic int ending;
    struct {
        bool on;         /* loads in flight to the prewarming worker */
        unsigned spawns; /* procs[1].spawns of the prewarming process */
        int leads;       /* prewarming workers started in this discovery */
        int died_on;     /* catalog index of the import the last one died in, or -1 */
        int *lib;
        unsigned long long *seq;
        int sent, answered;
    } prewarm;
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
    p->out_total += n;
}

static const char ic_case_mark[] = IC_OUTPUT_CASE_MARK;

/* Keeps `n` bytes read from the worker's output, less the case marks in them: at each mark
 * the output of the case (or import) that starts there begins. A mark split over two reads is
 * matched across them: its first bytes are held back (mark_matched) until it is whole, or
 * kept as output after all when the next byte is not the mark's. */
static void ic_proc_take_output(struct ic_proc *p, const char *data, size_t n)
{
    char plain[1024];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (p->mark_matched > 0 && data[i] != ic_case_mark[p->mark_matched]) {
            /* not a mark: what was held back is output (the mark has no border but its
             * first byte, so no later start of one hides in it) */
            if (used + p->mark_matched > sizeof(plain)) {
                ic_proc_keep_output(p, plain, used);
                used = 0;
            }
            memcpy(plain + used, ic_case_mark, p->mark_matched);
            used += p->mark_matched;
            p->mark_matched = 0;
        }
        if (data[i] == ic_case_mark[p->mark_matched]) {
            if (++p->mark_matched == sizeof(ic_case_mark) - 1) {
                ic_proc_keep_output(p, plain, used);
                used = 0;
                p->mark_matched = 0;
                p->case_out_from = p->out_total;
            }
            continue;
        }
        if (used == sizeof(plain)) {
            ic_proc_keep_output(p, plain, used);
            used = 0;
        }
        plain[used++] = data[i];
    }
    ic_proc_keep_output(p, plain, used);
}

static void ic_proc_drain_output(struct ic_proc *p)
{
    char chunk[IC_TAIL_MAX];
    for (;;) {
        ssize_t n = read(p->out_fd, chunk, sizeof(chunk));
        if (n > 0) {
            ic_proc_take_output(p, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EAGAIN (non-blocking) or end of file */
    }
}

/* What the worker wrote since its last case mark (ic_ipc.h), as far as the tail still holds
 * it: the output of the case in flight, from its start to its crash, or of the import it died
 * in. Output before the mark is other cases' or the imports' (TensorFlow's greeting, the
 * Python stack of a forked copy that died on the case before), and must not speak for this
 * case's crash. The mark is in the output itself: a mark the supervisor set when it handled a
 * message (the previous case's "end") came too late where the worker had run ahead, with the
 * next case's request already queued, and had written that case's stack before the "end" was
 * read: the crash was then quoted with no output at all, and charged without its stack. */
static const char *ic_proc_case_output(const struct ic_proc *p)
{
    unsigned long long dropped = p->out_total - p->tail_len;
    return p->case_out_from > dropped ? p->tail + (p->case_out_from - dropped) : p->tail;
}

/* Reads what the worker's SIGCHLD handler reported: the first child killed during the case
 * is kept for the case's diagnostic. */
static void ic_proc_drain_events(struct ic_proc *p)
{
    int32_t record[2];
    for (;;) {
        ssize_t n = p->ev_fd >= 0 ? read(p->ev_fd, record, sizeof(record)) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(record))
            break;
        /* The copy of the worker that runs the case is the case's own process, not a
         * child the case started. */
        if (p->busy && p->began && p->child_pid == 0 && record[0] != p->case_pid) {
            p->child_pid = record[0];
            p->child_signal = record[1];
        }
    }
}

/* A descriptor number for the worker's end of a channel: random, not `avoid`, and below the
 * descriptor limit. */
static int ic_pick_child_fd(int avoid, int source_a, int source_b)
{
    struct rlimit limit;
    int ceiling = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 1000
                      ? (int)limit.rlim_cur - 1
                      : 999;
    for (;;) {
        int fd = ic_ipc_child_fd();
        if (fd > ceiling)
            fd = 100 + fd % (ceiling > 110 ? ceiling - 100 : 10);
        if (fd != avoid && fd != source_a && fd != source_b)
            return fd;
    }
}

/* Makes `p` ready for a new process of its slot. The sets' storage and the slot's statistics
 * outlive the process. */
static void ic_proc_reset(struct ic_proc *p)
{
    struct ic_libset loaded = p->loaded, ever_loaded = p->ever_loaded;
    unsigned spawns = p->spawns;
    uint64_t *warm = p->warm;
    size_t warm_capacity = p->warm_capacity;
    memset(p, 0, sizeof(*p));
    p->loaded = loaded;
    p->ever_loaded = ever_loaded;
    p->warm = warm;
    p->warm_capacity = warm_capacity;
    if (warm)
        memset(warm, 0, warm_capacity * sizeof(*warm));
    p->spawns = spawns + 1;
    ic_libset_clear(&p->loaded);
    p->fd = p->out_fd = p->ev_fd = -1;
}

/* The supervisor's ends of a new worker's channel, output and events pipe: never block on a
 * worker (one that ended can leave its socket open in a child). */
static void ic_proc_take_ends(struct ic_proc *p, int sv0, int out0, int ev0)
{
    p->fd = sv0;
    p->out_fd = out0;
    p->ev_fd = ev0;
    fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) | O_NONBLOCK);
    fcntl(p->out_fd, F_SETFL, fcntl(p->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl(p->ev_fd, F_SETFL, fcntl(p->ev_fd, F_GETFL) | O_NONBLOCK);
}

/* Closes what is open of a new worker's three descriptor pairs (-1: not open). */
static void ic_close_ends(const int sv[2], const int out[2], const int ev[2])
{
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (out[i] >= 0)
            close(out[i]);
        if (ev[i] >= 0)
            close(ev[i]);
    }
}

static int ic_proc_next(struct ic_proc *p, double deadline, cJSON **ret_msg, char *how,
                        size_t how_size);
static void ic_proc_kill(struct ic_proc *p);
static cJSON *ic_proc_request(struct ic_pool *pool, struct ic_proc *p, enum ic_message kind,
                              const char *case_id);

/* How long a worker may take to fork a copy of itself (tens of milliseconds when it holds
 * every library). */
#define IC_COPY_TIMEOUT_S 10.0

/* Makes `p` a copy of worker `from` (a "copy" request, ic_worker.c): a process holding every
 * library `from` imported, a child of ours (we are a subreaper), with a channel, output and
 * events pipe of its own, the slot `slot`. 0, or IC_ECHILD with `p` left empty; `from` is
 * killed when it broke the protocol, hung or died. */
static int ic_proc_copy(struct ic_pool *pool, struct ic_proc *from, struct ic_proc *p, int slot)
{
    int sv[2] = {-1, -1}, out[2] = {-1, -1}, ev[2] = {-1, -1};
    cJSON *answer = NULL;
    char how[256];
    int rc = IC_ECHILD;

    ic_proc_reset(p);
    if (from->pid <= 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
        pipe2(out, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0)
        goto done;
    cJSON *msg = ic_proc_request(pool, from, IC_MSG_COPY, "");
    const int ends[3] = {sv[1], out[1], ev[1]};
    bool sent = msg && cJSON_AddNumberToObject(msg, "slot", slot) &&
                ic_ipc_send_fds(from->fd, msg, ends, 3) == 0;
    cJSON_Delete(msg);
    for (int i = 0; i < 3; i++)
        close(ends[i]);
    sv[1] = out[1] = ev[1] = -1;
    if (!sent)
        goto done;
    int got = ic_proc_next(from, ic_clock_s() + IC_COPY_TIMEOUT_S, &answer, how, sizeof(how));
    if (got == 0)
        ic_proc_kill(from);
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(answer, "pid");
    if (got != 1 || strcmp(ic_json_string_or(answer, "msg", ""), "copied") != 0 ||
        !cJSON_IsNumber(pid) || pid->valuedouble < 1)
        goto done;
    p->pid = (pid_t)pid->valuedouble;
    ic_proc_take_ends(p, sv[0], out[0], ev[0]);
    sv[0] = out[0] = ev[0] = -1;
    if (ic_libset_merge(&p->loaded, &from->loaded) < 0) {
        ic_proc_kill(p); /* it holds imports we could not note */
        goto done;
    }
    rc = 0;

done:
    cJSON_Delete(answer);
    ic_close_ends(sv, out, ev);
    return rc;
}

/* Children of ours that are no worker's: processes orphaned below a worker that died (a case
 * child, a library's helper), which come to us as the subreaper. Reaps those that ended. */
static void ic_pool_reap_strays(struct ic_pool *pool)
{
    if (!pool->subreaper)
        return;
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *task;
    while (tasks && (task = readdir(tasks)) != NULL) {
        char path[300];
        if (task->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/children", task->d_name);
        FILE *list = fopen(path, "r");
        long pid;
        while (list && fscanf(list, "%ld", &pid) == 1) {
            bool owned = pid == pool->template.pid || pid == pool->spun_off_pids[0] ||
                         pid == pool->spun_off_pids[1];
            for (int i = 0; i < pool->nprocs && !owned; i++)
                owned = pid == pool->procs[i].pid;
            if (!owned)
                waitpid((pid_t)pid, NULL, WNOHANG);
        }
        if (list)
            fclose(list);
    }
    if (tasks)
        closedir(tasks);
}

static int ic_proc_spawn_fresh(struct ic_pool *pool, struct ic_proc *p);

/* Starts worker `p`: a copy of the template where there is one, else a new process. */
static int ic_proc_spawn(struct ic_pool *pool, struct ic_proc *p)
{
    ic_pool_reap_strays(pool);
    if (pool->template.pid > 0 && p != &pool->template) {
        if (ic_proc_copy(pool, &pool->template, p, (int)(p - pool->procs)) == 0) {
            pool->stats.copies++;
            return 0;
        }
        ic_proc_kill(&pool->template); /* of no use now: workers are started afresh */
    }
    return ic_proc_spawn_fresh(pool, p);
}

/* Starts worker `p` as a new process, which imports nothing until asked. */
static int ic_proc_spawn_fresh(struct ic_pool *pool, struct ic_proc *p)
{
    int sv[2] = {-1, -1}, out[2] = {-1, -1}, ev[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    char fd_text[16], ev_text[16];
    int rc;

    ic_proc_reset(p);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(ev, O_CLOEXEC) < 0)
        goto fail;
    /* Not a number anything can guess (ic_ipc.h); the worker makes both close-on-exec. */
    int child_fd = ic_pick_child_fd(-1, sv[1], ev[1]);
    int child_ev = ic_pick_child_fd(child_fd, sv[1], ev[1]);
    snprintf(fd_text, sizeof(fd_text), "%d", child_fd);
    snprintf(ev_text, sizeof(ev_text), "%d", child_ev);

    char *argv[] = {(char *)pool->config.self_exe,
                    "--worker-fd",
                    fd_text,
                    "--worker-events-fd",
                    ev_text,
                    "--python",
                    (char *)pool->config.python,
                    "--probekit",
                    pool->catalog->kit_path,
                    NULL};
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    posix_spawn_file_actions_adddup2(&actions, sv[1], child_fd);
    posix_spawn_file_actions_adddup2(&actions, ev[1], child_ev);
    /* Its own process group: a timeout or a crash kills whatever the case started. */
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    /* The slot, for probes that tell workers apart (probes/README.md). setenv is safe here:
     * workers are started while the supervisor runs one thread (the report stage's second
     * thread is joined before reproducers start any). */
    char slot_text[16];
    snprintf(slot_text, sizeof(slot_text), "%d", (int)(p - pool->procs));
    setenv("INTEROPCHECK_WORKER", slot_text, 1);
    rc = posix_spawn(&p->pid, pool->config.self_exe, &actions, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        errno = rc;
        p->pid = 0;
        goto fail;
    }
    close(sv[1]);
    close(out[1]);
    close(ev[1]);
    ic_proc_take_ends(p, sv[0], out[0], ev[0]);
    return 0;

fail:
    fprintf(stderr, "interopcheck: cannot start a worker process: %s\n", strerror(errno));
    ic_close_ends(sv, out, ev);
    p->fd = p->out_fd = p->ev_fd = -1;
    return IC_ECHILD;
}

static void ic_proc_close_fds(struct ic_proc *p)
{
    if (p->fd >= 0)
        close(p->fd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->ev_fd >= 0)
        close(p->ev_fd);
    p->fd = p->out_fd = p->ev_fd = -1;
    ic_framebuf_release(&p->in);
}

/* True when the worker has ended; it is left unreaped (a zombie keeps its pid and group
 * from being reused), so that its group can still be killed. */
static bool ic_proc_ended(const struct ic_proc *p)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return p->pid > 0 && waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == p->pid;
}

/* Kills what is left of the worker's group and reaps the worker; `status` is how it ended. */
static void ic_proc_finish(struct ic_proc *p, int *status)
{
    kill(-p->pid, SIGKILL); /* whatever the case started and left behind */
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, status, 0) < 0 && errno == EINTR)
        ;
    ic_proc_drain_output(p);
    ic_proc_drain_events(p);
    ic_proc_close_fds(p);
    p->pid = 0;
}

/* Reaps a worker that closed its socket or ended; writes how it ended into `how`. A worker
 * that closed its socket but lives on gets a second to end before it is killed. */
static void ic_proc_reap(struct ic_proc *p, char *how, size_t size)
{
    int status = 0;
    for (int i = 0; i < 100 && !ic_proc_ended(p); i++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        ic_proc_drain_output(p);
        nanosleep(&pause, NULL);
    }
    ic_proc_finish(p, &status);
    if (WIFSIGNALED(status)) {
        char buf[32];
        snprintf(how, size, "%s", ic_signal_name(WTERMSIG(status), buf, sizeof(buf)));
    } else if (WIFEXITED(status)) {
        snprintf(how, size, "exit status %d", WEXITSTATUS(status));
    } else {
        snprintf(how, size, "an unknown status");
    }
}

static void ic_proc_kill(struct ic_proc *p)
{
    int status;
    if (p->pid <= 0)
        return;
    ic_proc_finish(p, &status);
}

/* Sends a hung worker SIGABRT, which faulthandler answers with the Python stack of every
 * thread before the process dies, and waits up to a second for that output. SIGCONT wakes a
 * worker that stopped itself, so that it can answer. */
static void ic_proc_abort(struct ic_proc *p)
{
    if (p->pid <= 0)
        return;
    /* The process running the case: the worker, or the copy of it that serves its cases. */
    pid_t target = p->case_pid > 0 ? p->case_pid : p->pid;
    kill(target, SIGABRT);
    kill(target, SIGCONT);
    double deadline = ic_clock_s() + 1.0;
    while (ic_clock_s() < deadline && !ic_proc_ended(p)) {
        struct pollfd out = {.fd = p->out_fd, .events = POLLIN};
        if (poll(&out, 1, 50) > 0)
            ic_proc_drain_output(p);
    }
    ic_proc_drain_output(p);
}

/* Asks a worker to quit, once, and closes its channel: it ends at the request or at the end
 * of file, whichever it reads first. */
static void ic_proc_send_quit(struct ic_pool *pool, struct ic_proc *p)
{
    if (p->pid <= 0 || p->fd < 0)
        return;
    cJSON *quit = ic_message_new(IC_MSG_QUIT, ++pool->next_seq);
    if (quit)
        ic_ipc_send(p->fd, quit);
    cJSON_Delete(quit);
    close(p->fd);
    p->fd = -1;
}

/* Gives the `count` workers from `first` on, asked to quit, a second in all to end, then kills
 * what is left of each group and reaps it. They end side by side: a process that imported
 * the libraries takes tens of milliseconds to go. */
static void ic_procs_reap_quitting(struct ic_proc *first, int count)
{
    for (int i = 0; i < 500; i++) {
        bool running = false;
        for (int j = 0; j < count && !running; j++)
            running = first[j].pid > 0 && !ic_proc_ended(&first[j]);
        if (!running)
            break;
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    for (int j = 0; j < count; j++)
        ic_proc_kill(&first[j]);
}

/* Asks a worker to quit, and kills its group if it does not within a second. */
static void ic_proc_stop(struct ic_pool *pool, struct ic_proc *p)
{
    ic_proc_send_quit(pool, p);
    ic_procs_reap_quitting(p, 1);
}

/* Checks one message of worker `p` against the table and the request in flight: its kind is
 * an answer, its "seq" the request's, and its case (when it names one) the case handed out.
 * 0 and the kind, or IC_EPROTO with the reason. */
static int ic_proc_accept(const struct ic_proc *p, const cJSON *msg, enum ic_message *ret_kind,
                          char *why, size_t why_size)
{
    if (ic_ipc_check(msg, IC_IPC_SUPERVISOR, ret_kind, why, why_size) < 0)
        return IC_EPROTO;
    double seq = cJSON_GetObjectItemCaseSensitive(msg, "seq")->valuedouble;
    if (seq != (double)p->seq) {
        snprintf(why, why_size, "a message \"%s\" for request %.0f; request %llu is in flight",
                 ic_message_name(*ret_kind), seq, p->seq);
        return IC_EPROTO;
    }
    const char *id = ic_json_string(msg, "case");
    if (id && strcmp(id, p->case_id) != 0) {
        snprintf(why, why_size, "a message \"%s\" for case %.200s; case %s was handed out",
                 ic_message_name(*ret_kind), id, p->case_id[0] ? p->case_id : "(none)");
        return IC_EPROTO;
    }
    return 0;
}

/* Waits for one message from a single worker. 1: *ret_msg is set (checked by
 * ic_proc_accept); 0: the deadline passed; IC_ECHILD: the worker died (reaped; `how` says
 * how); IC_EPROTO: it broke the protocol (killed; `how` says how). */
static int ic_proc_next(struct ic_proc *p, double deadline, cJSON **ret_msg, char *how,
                        size_t how_size)
{
    for (;;) {
        int error = 0;
        enum ic_message kind;
        cJSON *msg = ic_framebuf_next(&p->in, &error, how, how_size);
        if (msg && ic_proc_accept(p, msg, &kind, how, how_size) == 0) {
            *ret_msg = msg;
            return 1;
        }
        if (msg || error) {
            cJSON_Delete(msg);
            ic_proc_kill(p);
            return IC_EPROTO;
        }
        double left = deadline - ic_clock_s();
        if (left <= 0)
            return 0;
        struct pollfd fds[2] = {{.fd = p->fd, .events = POLLIN},
                                {.fd = p->out_fd, .events = POLLIN}};
        /* At most 100 ms: a worker can end while a child it forked keeps the socket open. */
        int n = poll(fds, 2, left > 0.1 ? 100 : (int)(left * 1000) + 1);
        if (n < 0 && errno != EINTR)
            return IC_EIO;
        if (fds[1].revents)
            ic_proc_drain_output(p);
        if (fds[0].revents) {
            int got = ic_framebuf_fill(&p->in, p->fd);
            if (got <= 0 && got != IC_EAGAIN) {
                ic_proc_reap(p, how, how_size);
                return IC_ECHILD;
            }
        } else if (ic_proc_ended(p)) {
            ic_proc_reap(p, how, how_size);
            return IC_ECHILD;
        }
    }
}

/* Where the first of `markers` appears in [text, end), or `end`. */
static const char *ic_first_marker(const char *text, const char *end, const char *const *markers,
                                   size_t count)
{
    const char *first = end;
    for (size_t m = 0; m < count; m++) {
        const char *at = strstr(text, markers[m]);
        if (at && at < first)
            first = at;
    }
    return first;
}

/* Narrows [*start, *end) to whole characters: the window cuts the output where it likes, and
 * the process may have died in the middle of writing a character. A character cut at either
 * edge is left out, whatever follows the quote in the diagnostic (a case's forked copy adds an
 * aside), rather than shown as U+FFFD there and dropped where the quote ends the text. At the
 * end, the cut is what ic_utf8_repair leaves unconsumed, so that the quote and the repair of
 * the diagnostic agree on what a cut character is; bytes that are not UTF-8 at all stay, for
 * that repair to show. */
static void ic_trim_cut_characters(const char **start, const char **end)
{
    const char *s = *start;
    for (int i = 0; i < 3 && s < *end && ((unsigned char)*s & 0xC0) == 0x80; i++)
        s++;
    char scratch[3 * IC_TAIL_QUOTE_MAX + 1]; /* room for every byte repaired: nothing stops it */
    size_t whole = 0;
    ic_utf8_repair(scratch, sizeof(scratch), s, (size_t)(*end - s), &whole);
    *start = s;
    *end = s + whole;
}

/* The worker's last output of the case (from `text` on), flattened to one line for a
 * diagnostic. The Python stack that faulthandler wrote when the worker died is left out: the
 * diagnostic names the call it shows, and the library's own last words are what a reader
 * needs besides. When the stack's header was pushed out of the tail (dozens of threads, the
 * list of extension modules), what is left of the stack is left out too. So are the C++
 * backtraces that follow the message of a failure: PyTorch's after an uncaught exception
 * ("frame #0: ...") and the one absl writes after a failed CHECK in TensorFlow ("*** Check
 * failure stack trace: ***" and "@ 0x..." lines): the message before them ("what(): ...",
 * "Check failed: ...") says what went wrong, the frames only addresses. */
static void ic_proc_tail_text(const char *text, char *buf, size_t size)
{
    const char *whole = text + strlen(text), *end = whole;
    for (const char *at = text; (at = strstr(at, "Fatal Python error: ")) != NULL; at++)
        end = at;
    if (end == whole) {
        static const char *const stack[] = {"\nCurrent thread 0x", "\nThread 0x",
                                            "\nExtension modules: "};
        end = ic_first_marker(text, end, stack, sizeof(stack) / sizeof(stack[0]));
    }
    static const char *const backtraces[] = {"\nframe #0: ", "*** Check failure stack trace: ***"};
    end = ic_first_marker(text, end, backtraces, sizeof(backtraces) / sizeof(backtraces[0]));
    const char *start = end - text > IC_TAIL_QUOTE_MAX ? end - IC_TAIL_QUOTE_MAX : text;
    ic_trim_cut_characters(&start, &end);
    size_t used = 0;
    for (const char *at = start; at < end && used + 1 < size; at++) {
        char ch = *at;
        buf[used++] = (ch == '\n' || ch == '\r' || ch == '\t') ? ' ' : ch;
    }
    buf[used] = '\0';
    while (used > 0 && buf[used - 1] == ' ')
        buf[--used] = '\0';
}

/* --- Pool ----------------------------------------------------------------------------------- */

/* A pool with no process yet. NULL when out of memory. */
static struct ic_pool *ic_pool_new(const struct ic_supervisor_config *config,
                                   struct ic_catalog *catalog)
{
    struct ic_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->config = *config;
    pool->catalog = catalog;
    pool->nprocs = config->jobs < 1 ? 1 : config->jobs;
    pool->procs = calloc((size_t)pool->nprocs, sizeof(*pool->procs));
    pool->fds = calloc(3 * (size_t)pool->nprocs, sizeof(*pool->fds));
    pool->owner = calloc(3 * (size_t)pool->nprocs, sizeof(*pool->owner));
    if (!pool->procs || !pool->fds || !pool->owner) {
        free(pool->procs);
        free(pool->fds);
        free(pool->owner);
        free(pool);
        return NULL;
    }
    for (int i = 0; i < pool->nprocs; i++)
        pool->procs[i].fd = pool->procs[i].out_fd = pool->procs[i].ev_fd = -1;
    pool->template.fd = pool->template.out_fd = pool->template.ev_fd = -1;
    atomic_init(&pool->ending, 0);
    return pool;
}

int ic_pool_create(const struct ic_supervisor_config *config, struct ic_catalog *catalog,
                   struct ic_pool **ret)
{
    struct ic_pool *pool = ic_pool_new(config, catalog);
    if (!pool)
        return IC_ENOMEM;
    /* Copies of the template are forked by it through a middle process that leaves at once:
     * as a subreaper we become their parent, and wait for them as for any worker. */
    pool->subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    /* A worker that dies while we write to it must not kill the supervisor. */
    signal(SIGPIPE, SIG_IGN);
    *ret = pool;
    return 0;
}

void ic_pool_set_stop(struct ic_pool *pool, const volatile sig_atomic_t *stop)
{
    pool->config.stop = stop;
}

void ic_pool_dismiss(struct ic_pool *pool)
{
    for (int i = 0; pool && i < pool->nprocs; i++)
        ic_proc_send_quit(pool, &pool->procs[i]);
    if (pool)
        ic_proc_send_quit(pool, &pool->template);
}

void ic_pool_destroy(struct ic_pool *pool)
{
    if (!pool)
        return;
    free(pool->prewarm.lib); /* left by a discovery that did not finish */
    free(pool->prewarm.seq);
    ic_pool_dismiss(pool);
    ic_procs_reap_quitting(pool->procs, pool->nprocs);
    ic_procs_reap_quitting(&pool->template, 1);
    ic_pool_reap_strays(pool);
    for (int i = 0; i < pool->nprocs; i++) {
        ic_libset_release(&pool->procs[i].loaded);
        ic_libset_release(&pool->procs[i].ever_loaded);
        free(pool->procs[i].warm);
    }
    ic_libset_release(&pool->template.loaded);
    ic_libset_release(&pool->template.ever_loaded);
    ic_libset_release(&pool->lean_heavy);
    if (pool->own_catalog)
        ic_catalog_release(pool->own_catalog);
    free(pool->own_catalog);
    free(pool->isolated_pairs);
    free(pool->procs);
    free(pool->fds);
    free(pool->owner);
    free(pool);
}

/* Starts request `kind` to `p`: a new sequence number, and the case it is about ("" for a
 * load). NULL when out of memory. */
static cJSON *ic_proc_request(struct ic_pool *pool, struct ic_proc *p, enum ic_message kind,
                              const char *case_id)
{
    p->seq = ++pool->next_seq;
    snprintf(p->case_id, sizeof(p->case_id), "%s", case_id);
    return ic_message_new(kind, p->seq);
}

/* Sends the load of `lib`. With `ask`, the answer is also to say which of the libraries not
 * loaded yet have a module of their own name imported by then (ic_discover_pick). */
static int ic_send_load(struct ic_pool *pool, struct ic_proc *p, const struct ic_library *lib,
                        bool ask)
{
    const struct ic_catalog *catalog = pool->catalog;
    cJSON *msg = ic_proc_request(pool, p, IC_MSG_LOAD, "");
    cJSON *names = msg && ask ? cJSON_AddArrayToObject(msg, "ask") : NULL;
    bool built = msg && (!ask || names) && cJSON_AddStringToObject(msg, "probe", lib->name) &&
                 cJSON_AddStringToObject(msg, "path", lib->path);
    for (int i = 0; built && names && i < catalog->count; i++) {
        const struct ic_library *other = &catalog->libs[i];
        if (other != lib && other->state == IC_LIBRARY_FOUND && !other->preloaded)
            built = cJSON_AddItemToArray(names, cJSON_CreateString(other->name));
    }
    int rc = built ? ic_ipc_send(p->fd, msg) : IC_ENOMEM;
    cJSON_Delete(msg);
    return rc;
}

/* Marks the libraries a load's answer names in "present" (ic_send_load). */
static void ic_note_present(struct ic_catalog *catalog, const cJSON *answer)
{
    const cJSON *name;
    cJSON_ArrayForEach(name, cJSON_GetObjectItemCaseSensitive(answer, "present"))
    {
        int index = cJSON_IsString(name) ? ic_catalog_find(catalog, name->valuestring) : -1;
        if (index >= 0 && catalog->libs[index].state == IC_LIBRARY_FOUND)
            catalog->libs[index].preloaded = true;
    }
}

enum ic_load_result {
    IC_LOAD_OK,
    IC_LOAD_NOT_INSTALLED,
    IC_LOAD_IMPORT_ERROR,
    IC_LOAD_DIED,
    IC_LOAD_TIMEOUT,
};

/* Loads library `index` into worker `p` and waits for the answer. On IC_LOAD_OK the catalog
 * entry gets the probe's info; otherwise `why` says what happened. `progress` (NULL: none) is
 * told once the load is sent, while the worker imports. */
static enum ic_load_result ic_pool_load_announced(struct ic_pool *pool, struct ic_proc *p,
                                                  int index, ic_discover_progress_fn progress,
                                                  void *context, char *why, size_t why_size)
{
    struct ic_library *lib = &pool->catalog->libs[index];
    char how[256];
    cJSON *msg = NULL;
    bool fresh = p->pid == 0;
    double started = ic_clock_s();

    if (p->pid == 0 && ic_proc_spawn(pool, p) < 0) {
        snprintf(why, why_size, "no worker process could be started");
        return IC_LOAD_DIED;
    }
    if (ic_send_load(pool, p, lib, true) < 0) {
        ic_proc_reap(p, how, sizeof(how));
        snprintf(why, why_size, "the worker ended (%s) before the import", how);
        return IC_LOAD_DIED;
    }
    if (progress)
        progress(context, lib, IC_DISCOVER_IMPORTING);
    double deadline = ic_clock_s() + pool->config.load_timeout_s;
    int rc = ic_proc_next(p, deadline, &msg, how, sizeof(how));
    if (rc == 0) {
        ic_proc_kill(p);
        snprintf(why, why_size, "importing it took longer than %.0f s",
                 pool->config.load_timeout_s);
        return IC_LOAD_TIMEOUT;
    }
    if (rc < 0 || strcmp(ic_json_string_or(msg, "msg", ""), "loaded") != 0 ||
        strcmp(ic_json_string_or(msg, "probe", ""), lib->name) != 0) {
        char tail[700];
        if (rc > 0) {
            snprintf(how, sizeof(how), "a \"%s\" message where \"loaded\" for %s was due",
                     ic_json_string_or(msg, "msg", ""), lib->name);
            ic_proc_kill(p);
        }
        cJSON_Delete(msg);
        ic_proc_tail_text(p->tail, tail, sizeof(tail));
        if (rc == IC_ECHILD)
            snprintf(why, why_size, "the worker died with %s while importing it%s%s", how,
                     tail[0] ? "; last output: " : "", tail);
        else
            snprintf(why, why_size, "worker protocol violation while importing it: %s%s%s", how,
                     tail[0] ? "; last output: " : "", tail);
        return IC_LOAD_DIED;
    }
    enum ic_load_result result;
    ic_note_present(pool->catalog, msg);
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(msg, "ms");
    lib->load_ms = cJSON_IsNumber(ms) ? ms->valuedouble : 0;
    double start_s = ic_clock_s() - started - lib->load_ms / 1000.0;
    if (fresh)
        pool->start_s = start_s > 0 ? start_s : 0;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "ok"))) {
        ic_libset_add(&p->loaded, index); /* out of memory: imported again later, harmlessly */
        ic_library_set_info(lib, cJSON_DetachItemFromObjectCaseSensitive(msg, "info"));
        result = IC_LOAD_OK;
    } else {
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(error, "type");
        const cJSON *message = cJSON_GetObjectItemCaseSensitive(error, "message");
        int len = snprintf(why, why_size, "%s: %s",
                           cJSON_IsString(type) ? type->valuestring : "Error",
                           cJSON_IsString(message) ? message->valuestring : "");
        ic_text_fix_formatted(why, why_size, len); /* the library's text, cut on a character */
        result = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(error, "not_installed"))
                     ? IC_LOAD_NOT_INSTALLED
                     : IC_LOAD_IMPORT_ERROR;
    }
    cJSON_Delete(msg);
    return result;
}

static enum ic_load_result ic_pool_load(struct ic_pool *pool, struct ic_proc *p, int index,
                                        char *why, size_t why_size)
{
    return ic_pool_load_announced(pool, p, index, NULL, NULL, why, why_size);
}

static void ic_mark_failed(struct ic_library *lib, enum ic_library_state state, const char *why)
{
    lib->state = state;
    ic_text_copy(lib->error, sizeof(lib->error), why, strlen(why)); /* repaired, cut whole */
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

/* --- Prewarming ----------------------------------------------------------------------------- */

static int ic_order_position(const struct ic_catalog *catalog, int index);

static void ic_prewarm_stop(struct ic_pool *pool)
{
    if (pool->prewarm.on && pool->prewarm.answered < pool->prewarm.sent)
        ic_proc_kill(&pool->procs[1]); /* half through an import: of no use to the run */
    pool->prewarm.on = false;
}

/* Drops the list of loads of the last prewarming worker (before a new one starts). */
static void ic_prewarm_forget(struct ic_pool *pool)
{
    free(pool->prewarm.lib);
    free(pool->prewarm.seq);
    pool->prewarm.lib = NULL;
    pool->prewarm.seq = NULL;
    pool->prewarm.sent = pool->prewarm.answered = 0;
}

/* Gives the prewarming worker up: it is killed, and the run starts its slot afresh. */
static void ic_prewarm_abandon(struct ic_pool *pool)
{
    ic_proc_kill(&pool->procs[1]);
    ic_libset_clear(&pool->procs[1].loaded);
    ic_prewarm_stop(pool);
}

/* Takes `msg` if it is the answer to the prewarming worker's oldest load in flight: true,
 * and the library is counted imported when the import succeeded. */
static bool ic_prewarm_answer(struct ic_pool *pool, const cJSON *msg)
{
    struct ic_proc *p = &pool->procs[1];
    int k = pool->prewarm.answered;
    if (!pool->prewarm.on || k >= pool->prewarm.sent || p->spawns != pool->prewarm.spawns)
        return false;
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(msg, "seq");
    const char *lib_name = pool->catalog->libs[pool->prewarm.lib[k]].name;
    if (!cJSON_IsNumber(seq) || seq->valuedouble != (double)pool->prewarm.seq[k] ||
        strcmp(ic_json_string_or(msg, "msg", ""), "loaded") != 0 ||
        strcmp(ic_json_string_or(msg, "probe", ""), lib_name) != 0)
        return false;
    double seconds = ic_json_number_or(msg, "ms", 0) / 1000.0;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "ok"))) {
        ic_libset_add(&p->loaded, pool->prewarm.lib[k]);
        /* An answer read once the run started: the slot's next process imports it again. */
        ic_libset_add(&p->ever_loaded, pool->prewarm.lib[k]);
        pool->stats.prewarm_s += seconds;
    }
    p->import_s += seconds; /* during a run: import time of the request in flight, no wait */
    if (++pool->prewarm.answered == pool->prewarm.sent)
        ic_prewarm_stop(pool);
    return true;
}

/* Reads the prewarming worker's answers that arrive by `deadline`, in the order its loads
 * were sent. A worker that dies or breaks the protocol is given up (killed), and the run starts
 * its slot afresh as it would without prewarming; an import that fails there (and not in
 * discovery's worker) is left to the run, whose requests list it again. */
static void ic_prewarm_collect(struct ic_pool *pool, double deadline)
{
    struct ic_proc *p = &pool->procs[1];
    char how[256];
    while (pool->prewarm.on && pool->prewarm.answered < pool->prewarm.sent) {
        cJSON *msg = NULL;
        int k = pool->prewarm.answered;
        p->seq = pool->prewarm.seq[k]; /* answers come in the order the loads were sent */
        int rc = ic_proc_next(p, deadline, &msg, how, sizeof(how));
        if (rc == 0)
            return; /* not yet: looked at again later */
        bool ok = rc > 0 && ic_prewarm_answer(pool, msg);
        cJSON_Delete(msg);
        if (!ok) {
            pool->prewarm.died_on = pool->prewarm.lib[k];
            ic_prewarm_abandon(pool);
        }
    }
}

/* How many prewarming workers one discovery starts at most: one, and one again after each
 * library discovery had to move or the prewarming worker died on, up to this many. */
enum { IC_PREWARM_LEADS_MAX = 4 };

static bool ic_prewarm_send(struct ic_pool *pool, int index)
{
    struct ic_proc *p = &pool->procs[1];
    if (ic_send_load(pool, p, &pool->catalog->libs[index], false) < 0)
        return false;
    pool->prewarm.lib[pool->prewarm.sent] = index;
    pool->prewarm.seq[pool->prewarm.sent++] = p->seq;
    return true;
}

/* Starts a prewarming worker and sends it, at once, every import discovery has still to make
 * after the libraries of the current order: the order first, then each wanted library from
 * catalog index `from` on. It imports them while discovery's worker imports the same ones, in
 * the same order; its answers are read as they come (ic_prewarm_collect). Imports are not
 * waited for: which of them discovery keeps is checked when discovery ends. */
static void ic_prewarm_lead(struct ic_pool *pool, const struct ic_libset *wanted, int from)
{
    struct ic_catalog *catalog = pool->catalog;
    struct ic_proc *p = &pool->procs[1];
    if (pool->prewarm.leads >= IC_PREWARM_LEADS_MAX || p->pid != 0)
        return;
    pool->prewarm.leads++;
    ic_prewarm_forget(pool);
    pool->prewarm.lib = calloc((size_t)catalog->count + 1, sizeof(*pool->prewarm.lib));
    pool->prewarm.seq = calloc((size_t)catalog->count + 1, sizeof(*pool->prewarm.seq));
    if (!pool->prewarm.lib || !pool->prewarm.seq || ic_proc_spawn(pool, p) < 0) {
        ic_prewarm_forget(pool); /* no prewarming, nothing else lost */
        return;
    }
    pool->stats.workers_started++;
    pool->prewarm.spawns = p->spawns;
    pool->prewarm.on = true;
    bool sent = true;
    for (int i = 0; i < catalog->order_count && sent; i++)
        sent = ic_prewarm_send(pool, catalog->order[i]);
    for (int index = from; index < catalog->count && sent; index++) {
        if (ic_libset_has(wanted, index) && catalog->libs[index].state == IC_LIBRARY_FOUND)
            sent = ic_prewarm_send(pool, index);
    }
    if (!sent || pool->prewarm.sent == 0)
        ic_prewarm_abandon(pool);
}

/* Discovery is over. The prewarming worker is kept if what it holds is a part of the order
 * discovery settled, in that order: the libraries discovery left out (an import error, a
 * crash) must have failed there too, so their answers are waited for (within the import
 * timeout); the others' last answers are taken as they come during the run
 * (ic_prewarm_answer): the worker reads the run's requests after its loads, and a run
 * request lists every library not answered yet (one loaded already is skipped). Otherwise it
 * is stopped, and the run starts that slot afresh. */
static void ic_prewarm_finish(struct ic_pool *pool)
{
    struct ic_proc *p = &pool->procs[1];
    if (!pool->prewarm.lib || p->pid <= 0 || p->spawns != pool->prewarm.spawns)
        return;
    int last = -1;
    for (int k = 0; k < pool->prewarm.sent; k++) {
        int index = pool->prewarm.lib[k];
        int position = ic_order_position(pool->catalog, index);
        if (position < pool->catalog->order_count) {
            if (position < last) {
                ic_prewarm_abandon(pool);
                return;
            }
            last = position;
            continue;
        }
        while (pool->prewarm.on && pool->prewarm.answered <= k) {
            int before = pool->prewarm.answered;
            ic_prewarm_collect(pool, ic_clock_s() + pool->config.load_timeout_s);
            if (pool->prewarm.on && pool->prewarm.answered == before)
                ic_prewarm_abandon(pool); /* an import past the timeout */
        }
        if (p->pid <= 0 || ic_libset_has(&p->loaded, index)) {
            ic_prewarm_abandon(pool);
            return;
        }
    }
}

/* Makes the template (struct ic_pool): a copy of discovery's worker, which holds every import
 * of the order and has run nothing else. Not where a library's arrays are unusable in a fork
 * of a process that loaded it (its probe's "fork": false) or where a library found a CUDA
 * device (the CUDA driver refuses every call in a child of a process that initialised it):
 * workers are then started afresh, each importing what its cases need. */
static bool ic_pool_may_copy(const struct ic_pool *pool)
{
    return !pool->config.no_copies && pool->subreaper;
}

/* A library whose import keeps discovery's worker from being the template. */
static bool ic_library_blocks_copies(const struct ic_library *lib)
{
    return lib->no_fork || (lib->devices & (1u << IC_KIND_CUDA));
}

static void ic_pool_make_template(struct ic_pool *pool)
{
    struct ic_proc *source = &pool->procs[0];
    const struct ic_catalog *catalog = pool->catalog;
    if (!ic_pool_may_copy(pool) || pool->template.pid > 0 || source->pid <= 0 ||
        source->ran_in_process || catalog->order_count == 0)
        return;
    for (int i = 0; i < catalog->order_count; i++) {
        if (ic_library_blocks_copies(&catalog->libs[catalog->order[i]]))
            return;
    }
    if (ic_proc_copy(pool, source, &pool->template, 0) < 0)
        return;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/statm", (long)pool->template.pid);
    FILE *statm = fopen(path, "re");
    unsigned long long size = 0, resident = 0;
    if (statm && fscanf(statm, "%llu %llu", &size, &resident) == 2)
        pool->template_mib = (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
    if (statm)
        fclose(statm);
}

/* The library discovery loads next: the first in catalog order still to load, unless, with
 * `preloaded_first`, one whose module the imports so far brought in already (ic_note_present).
 * That one goes first: its probe imports nothing new, so no import changes its place among the
 * others (some pairs of libraries only coexist in one order), and its pairs can run early
 * (ic_early.h), a NumPy right after the first library that imports NumPy. -1 when none is
 * left. */
static int ic_discover_pick(const struct ic_catalog *catalog, const struct ic_libset *wanted,
                            bool preloaded_first)
{
    int first = -1;
    for (int index = 0; index < catalog->count; index++) {
        const struct ic_library *lib = &catalog->libs[index];
        if (!ic_libset_has(wanted, index) || lib->state != IC_LIBRARY_FOUND)
            continue;
        if (preloaded_first && lib->preloaded)
            return index;
        if (first < 0)
            first = index;
    }
    return first;
}

int ic_pool_discover(struct ic_pool *pool, const struct ic_libset *wanted, bool prewarm,
                     ic_discover_progress_fn progress, void *context)
{
    struct ic_catalog *catalog = pool->catalog;
    struct ic_proc *p = &pool->procs[0];
    char why[1024], alone_why[1024];

    catalog->order_count = 0;
    /* Prewarming pays only where the run's workers cannot be copies of the template: a copy
     * holds every import in milliseconds, while a second process importing beside discovery
     * slows discovery itself (5.5 s of --all's imports took 6.5 s with one beside them). So it
     * starts at once only where copies are off, and otherwise at the first library that
     * rules the template out, from the next import on (the order so far first). */
    bool prewarm_wanted = prewarm && pool->nprocs > 1 && pool->procs[1].pid == 0;
    bool prewarming = prewarm_wanted && !ic_pool_may_copy(pool);
    pool->prewarm.leads = 0;
    pool->prewarm.died_on = -1;
    /* Each load settles its library (loaded, or failed with a state saying why): at most one
     * pick each. A prewarming worker is sent the rest in catalog order, which discovery then
     * keeps. */
    for (int picks = 0; picks < catalog->count; picks++) {
        int index = ic_discover_pick(catalog, wanted, !prewarming);
        if (index < 0)
            break;
        struct ic_library *lib = &catalog->libs[index];
        /* A prewarming worker that died importing a library starts again once discovery has
         * settled that library, so as not to die on it again. */
        if (prewarming && pool->procs[1].pid == 0 && index > pool->prewarm.died_on)
            ic_prewarm_lead(pool, wanted, index);
        if (progress)
            progress(context, lib, IC_DISCOVER_NEXT);
        enum ic_load_result result =
            ic_pool_load_announced(pool, p, index, progress, context, why, sizeof(why));
        if (result == IC_LOAD_OK) {
            catalog->order[catalog->order_count++] = index;
            prewarming = prewarming || (prewarm_wanted && ic_library_blocks_copies(lib));
            ic_prewarm_collect(pool, ic_clock_s() + 0.001); /* takes what has arrived, so that
                                                                its answers never fill the socket */
            continue;
        }
        if (result == IC_LOAD_IMPORT_ERROR || result == IC_LOAD_NOT_INSTALLED) {
            ic_mark_failed(lib,
                           result == IC_LOAD_NOT_INSTALLED ? IC_LIBRARY_NOT_INSTALLED
                                                           : IC_LIBRARY_IMPORT_ERROR,
                           why);
            continue;
        }
        /* It killed or hung discovery's worker: the prewarming worker, which imported it
         * too, is given up, and starts again once discovery has settled this library. */
        if (prewarming) {
            ic_prewarm_abandon(pool);
            pool->prewarm.died_on = index;
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
        ic_libset_clear(&lib->load_before);
        for (int i = 0; i < catalog->order_count; i++)
            ic_libset_add(&lib->load_before, catalog->order[i]);
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
                int len = snprintf(lib->error, sizeof(lib->error),
                                   "imports alone, but not in one process with %s (%s)",
                                   catalog->libs[catalog->order[i]].name, alone_why);
                ic_text_fix_formatted(lib->error, sizeof(lib->error), len);
            }
        }
        if (!together) {
            lib->state = IC_LIBRARY_IMPORT_CRASH;
            memmove(&catalog->order[0], &catalog->order[1],
                    sizeof(int) * (size_t)(catalog->order_count - 1));
            catalog->order_count--;
            ic_pool_restore(pool, p);
        } else {
            int len = snprintf(lib->error, sizeof(lib->error),
                               "imported first instead: it crashed when imported after other "
                               "libraries (%s)",
                               why);
            ic_text_fix_formatted(lib->error, sizeof(lib->error), len);
        }
    }
    ic_prewarm_finish(pool);
    ic_pool_make_template(pool);
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

/* The libraries a case imports: its producer and, unless it is the reference, consumer. */
struct ic_needs {
    int lib[2];
    int count;
};

static struct ic_needs ic_needed(const struct ic_pool *pool, const char *producer,
                                 const char *consumer)
{
    struct ic_needs needs = {{-1, -1}, 0};
    int a = ic_catalog_find(pool->catalog, producer);
    int b = ic_catalog_find(pool->catalog, consumer);
    if (a >= 0)
        needs.lib[needs.count++] = a;
    if (b >= 0 && b != a)
        needs.lib[needs.count++] = b;
    return needs;
}

/* True when worker `p` cannot import `needs` any more because one of them must come before
 * a library it already has. */
static bool ic_proc_conflicts(const struct ic_pool *pool, const struct ic_proc *p,
                              const struct ic_needs *needs)
{
    for (int n = 0; n < needs->count; n++) {
        int i = needs->lib[n];
        if (!ic_libset_has(&p->loaded, i) &&
            ic_libset_intersects(&pool->catalog->libs[i].load_before, &p->loaded))
            return true;
    }
    return false;
}

/* Adds the "load" list of the libraries in `needs` that `p` lacks, in the pool's import
 * order, and remembers them as pending. */
static int ic_add_load_list(struct ic_pool *pool, struct ic_proc *p, cJSON *msg,
                            const struct ic_needs *needs)
{
    const struct ic_catalog *catalog = pool->catalog;
    cJSON *load = cJSON_AddArrayToObject(msg, "load");
    if (!load)
        return IC_ENOMEM;
    p->npending = 0;
    for (int n = 0; n < needs->count; n++) {
        if (!ic_libset_has(&p->loaded, needs->lib[n]))
            p->pending[p->npending++] = needs->lib[n];
    }
    if (p->npending == 2 && ic_order_position(catalog, p->pending[1]) <
                                ic_order_position(catalog, p->pending[0])) {
        int first = p->pending[1];
        p->pending[1] = p->pending[0];
        p->pending[0] = first;
    }
    for (int i = 0; i < p->npending; i++) {
        cJSON *item = cJSON_CreateObject();
        if (!item || !cJSON_AddItemToArray(load, item) ||
            !cJSON_AddStringToObject(item, "probe", catalog->libs[p->pending[i]].name) ||
            !cJSON_AddStringToObject(item, "path", catalog->libs[p->pending[i]].path))
            return IC_ENOMEM;
    }
    return 0;
}

/* Notes a "loaded" answer: the library is in the worker now. */
static void ic_proc_note_loaded(struct ic_pool *pool, struct ic_proc *p, const cJSON *msg)
{
    int index = ic_catalog_find(pool->catalog, ic_json_string_or(msg, "probe", ""));
    if (index >= 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "ok")))
        ic_libset_add(&p->loaded, index); /* out of memory: imported again later, harmlessly */
}

/* The "probes" of a reproducer's request: the case's producer and consumer (not the
 * reference consumer, which has no probe), each with its file. */
static int ic_add_probe_list(struct ic_pool *pool, cJSON *msg, const struct ic_case *c)
{
    cJSON *probes = cJSON_AddArrayToObject(msg, "probes");
    if (!probes)
        return IC_ENOMEM;
    const char *names[] = {c->producer, c->consumer};
    for (size_t i = 0; i < 2; i++) {
        int lib = ic_catalog_find(pool->catalog, names[i]);
        if (lib < 0)
            continue; /* the reference consumer; an unknown name, which the worker reports */
        cJSON *item = cJSON_CreateObject();
        if (!item || !cJSON_AddItemToArray(probes, item) ||
            !cJSON_AddStringToObject(item, "probe", pool->catalog->libs[lib].name) ||
            !cJSON_AddStringToObject(item, "path", pool->catalog->libs[lib].path))
            return IC_ENOMEM;
    }
    return 0;
}

/* One reproducer: sends the request to `p` and waits for its answer. */
static void ic_reproduce_one(struct ic_pool *pool, struct ic_proc *p, const cJSON *request,
                             size_t index, ic_script_fn on_script, void *context)
{
    char how[256], error[800];
    struct ic_case c;
    const char *id = ic_json_string(request, "case");
    const cJSON *failure = cJSON_GetObjectItemCaseSensitive(request, "failure");
    if (!id || ic_case_parse_id(id, &c) < 0 || !cJSON_IsObject(failure)) {
        on_script(context, index, NULL, "the example case id is not valid");
        return;
    }
    if (p->pid == 0 && ic_proc_spawn(pool, p) < 0) {
        on_script(context, index, NULL, "no worker process could be started");
        return;
    }
    /* The worker opens the two probes without their load(): a reproducer is their REPRO text,
     * and needs neither library imported, so any worker writes any reproducer. */
    cJSON *msg = ic_proc_request(pool, p, IC_MSG_REPRO, id);
    if (!msg || !cJSON_AddStringToObject(msg, "case", id) ||
        !cJSON_AddItemToObject(msg, "failure", cJSON_Duplicate(failure, true)) ||
        ic_add_probe_list(pool, msg, &c) < 0 || ic_ipc_send(p->fd, msg) < 0) {
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
                     rc == 0               ? "timed out"
                     : rc == IC_EPROTO     ? "broke the protocol"
                                           : "died");
            ic_libset_clear(&p->loaded);
            on_script(context, index, NULL, error);
            return;
        }
        const char *kind = ic_json_string_or(answer, "msg", "");
        if (strcmp(kind, "loaded") == 0)
            ic_proc_note_loaded(pool, p, answer);
        if (strcmp(kind, "script") == 0) {
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
                       const struct ic_needs *needed, bool fork_case, bool queued)
{
    char id[IC_CASE_ID_MAX], seed[32];
    int rc = IC_ENOMEM;
    if (ic_case_format_id(c, id, sizeof(id)) < 0)
        return IC_EINVAL;
    snprintf(seed, sizeof(seed), "%" PRIu64, pool->config.seed);
    cJSON *msg;
    if (queued) { /* its libraries are loaded (ic_pool_queue): an empty load list */
        struct ic_queued_case *q = &p->queued[p->nqueued - 1];
        q->seq = ++pool->next_seq;
        snprintf(q->id, sizeof(q->id), "%s", id);
        msg = ic_message_new(IC_MSG_RUN, q->seq);
        if (!msg || !cJSON_AddArrayToObject(msg, "load") ||
            !cJSON_AddBoolToObject(msg, "pipelined", true))
            goto done;
    } else {
        msg = ic_proc_request(pool, p, IC_MSG_RUN, id);
        if (!msg || ic_add_load_list(pool, p, msg, needed) < 0)
            goto done;
    }
    if (!cJSON_AddStringToObject(msg, "case", id) ||
        !cJSON_AddStringToObject(msg, "seed", seed) ||
        (fork_case && !cJSON_AddBoolToObject(msg, "fork", true)))
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
    char child[400], flaw[IC_DIAG_MSG_MAX + 200];
    memset(&res, 0, sizeof(res));
    ic_proc_drain_output(p); /* the Python stack of a copy that died is in the pipe */
    const char *output = ic_proc_case_output(p);
    ic_proc_tail_text(output, tail, sizeof(tail));
    if (outcome != IC_OUTCOME_ERROR && p->child_pid) {
        /* A child the case started died by a signal and the worker failed after it: the
         * child's crash is the case's, whatever the worker did next (hang or die). */
        char name[32];
        snprintf(child, sizeof(child), "a child process the case started (pid %d) died with %s; then %s",
                 (int)p->child_pid, ic_signal_name(p->child_signal, name, sizeof(name)), what);
        what = child;
        outcome = IC_OUTCOME_CRASH;
    }
    /* Last, after the library's own last words, which are what a maintainer reads for. */
    const char *aside = p->forked ? "; it was a copy of the worker forked to run the cases of "
                                    "a pair that crashed before (in this run or, by the crash "
                                    "ledger, an earlier one), and the worker stays"
                                  : "";
    p->forked = false;
    if (outcome == IC_OUTCOME_ERROR) {
        ic_result_set(&res, outcome, "%s%s%s%s", what, tail[0] ? "; last output: " : "", tail,
                      aside);
    } else {
        int producer = ic_catalog_find(pool->catalog, c->producer);
        int consumer = ic_catalog_find(pool->catalog, c->consumer);
        ic_crash_locate(output, producer >= 0 ? pool->catalog->libs[producer].path : NULL,
                        consumer >= 0 ? pool->catalog->libs[consumer].path : NULL, &site);
        if (site.probe_call[0])
            snprintf(where, sizeof(where), " in %s (innermost Python frame: %s)", site.probe_call,
                     site.innermost);
        else if (site.innermost[0])
            snprintf(where, sizeof(where), " (innermost Python frame: %s)", site.innermost);
        else if (site.traceback)
            snprintf(where, sizeof(where), " outside Python code (no Python frame was running)");
        if (site.side == IC_SIDE_CONSUMER && p->flaw_rule != IC_RULE_NONE) {
            /* The consumer died of, or hung on, an export that broke a harmful rule of the
             * producer's (the worker said so before the consumer touched it): the producer's
             * rule is the cause, and the consumer's fate how it showed. */
            snprintf(flaw, sizeof(flaw), ", after %s handed it an export that breaks %s: %s",
                     c->producer, ic_rule_id(p->flaw_rule), p->flaw_text);
            ic_result_set_fault(&res, outcome, p->flaw_rule, IC_SIDE_PRODUCER, "%s%s%s%s%s%s", what,
                                where, flaw, tail[0] ? "; last output: " : "", tail, aside);
        } else {
            ic_result_set_fault(&res, outcome,
                                outcome == IC_OUTCOME_CRASH ? IC_RULE_EXCHANGE_CRASH
                                                            : IC_RULE_EXCHANGE_TIMEOUT,
                                site.side, "%s%s%s%s%s", what, where,
                                tail[0] ? "; last output: " : "", tail, aside);
        }
    }
    on_result(context, p->case_index, &res);
    p->busy = false;
}

/* Handles one accepted message of a busy worker. Returns true when the case ended. */
static uint64_t ic_warm_key(char side, const char *library, int protocol, int dtype, int layout)
{
    uint64_t h = (ic_text_hash(library) ^ (unsigned char)side) * 1099511628211ull;
    const int fields[] = {protocol, dtype, layout};
    for (int i = 0; i < 3; i++)
        h = (h ^ (uint64_t)(unsigned)fields[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Adds `key` to the process's table; true when it was there already. Out of memory: false,
 * and the case counts as cold. */
static bool ic_warm_seen(struct ic_proc *p, uint64_t key)
{
    if (2 * (p->warm_count + 1) > p->warm_capacity) {
        size_t capacity = p->warm_capacity ? 2 * p->warm_capacity : 1024;
        uint64_t *table = calloc(capacity, sizeof(*table));
        if (!table)
            return false;
        for (size_t i = 0; i < p->warm_capacity; i++) {
            size_t at = (size_t)p->warm[i] & (capacity - 1);
            while (p->warm[i] && table[at])
                at = (at + 1) & (capacity - 1);
            if (p->warm[i])
                table[at] = p->warm[i];
        }
        free(p->warm);
        p->warm = table;
        p->warm_capacity = capacity;
    }
    size_t at = (size_t)key & (p->warm_capacity - 1);
    while (p->warm[at] && p->warm[at] != key)
        at = (at + 1) & (p->warm_capacity - 1);
    if (p->warm[at])
        return true;
    p->warm[at] = key;
    p->warm_count++;
    return false;
}

/* Whether case `c` ran on warm caches in worker `p`: the process built the producer's array
 * of that dtype and layout, and had the consumer import that protocol, dtype and layout,
 * before (what a library compiles or caches for a shape, JAX's import and operation among
 * them). Notes both as done. */
static bool ic_case_warm(struct ic_proc *p, const struct ic_case *c)
{
    bool built = ic_warm_seen(p, ic_warm_key('p', c->producer, -1, c->dtype, c->layout));
    bool imported =
        ic_warm_seen(p, ic_warm_key('c', c->consumer, c->protocol, c->dtype, c->layout));
    return built && imported;
}

static bool ic_handle_message(struct ic_pool *pool, struct ic_proc *p, const cJSON *msg,
                              enum ic_message kind, const struct ic_case *c,
                              ic_result_fn on_result, void *context)
{
    if (kind == IC_MSG_LOADED) {
        int index = ic_catalog_find(pool->catalog, ic_json_string_or(msg, "probe", ""));
        double seconds = ic_json_number_or(msg, "ms", 0) / 1000.0;
        p->import_s += seconds;
        if (index >= 0 && ic_libset_has(&p->ever_loaded, index))
            pool->stats.reimport_s += seconds;
        else
            pool->stats.import_s += seconds;
        if (index >= 0)
            ic_libset_add(&p->ever_loaded, index); /* out of memory: counted as a first import */
        ic_proc_note_loaded(pool, p, msg);
        for (int i = 0; i < p->npending; i++) {
            if (p->pending[i] == index) {
                memmove(&p->pending[i], &p->pending[i + 1],
                        sizeof(int) * (size_t)(p->npending - i - 1));
                p->npending--;
                break;
            }
        }
        if (!p->lean) /* a lean worker's budget is for all its imports (ic_lean_failed) */
            p->deadline = ic_clock_s() + pool->config.load_timeout_s;
        return false;
    }
    if (kind == IC_MSG_FLAWED) {
        enum ic_rule rule;
        const struct ic_rule_info *info =
            ic_rule_from_id(ic_json_string_or(msg, "rule", ""), &rule) == 0 ? ic_rule_info(rule)
                                                                            : NULL;
        /* Only a harmful rule of the producer's shifts a crash: anything else is ignored. */
        if (info && info->side == IC_SIDE_PRODUCER && info->severity == IC_CLASS_HARMFUL &&
            p->flaw_rule == IC_RULE_NONE) {
            p->flaw_rule = rule;
            ic_text_copy(p->flaw_text, sizeof(p->flaw_text), ic_json_string_or(msg, "text", ""),
                         strlen(ic_json_string_or(msg, "text", "")));
        }
        return false;
    }
    if (kind == IC_MSG_BEGIN) {
        p->began = true;
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(msg, "pid");
        /* Only a process of the worker's own group is ever signalled: the worker itself (it
         * leads the group, no need to ask) or a copy of it it forked. */
        pid_t said = cJSON_IsNumber(pid) ? (pid_t)pid->valuedouble : 0;
        p->case_pid = said > 0 && (said == p->pid || getpgid(said) == p->pid) ? said : 0;
        p->npending = 0;
        p->began_at = ic_clock_s();
        double wait = p->began_at - p->sent_at - p->import_s;
        pool->stats.wait_s += wait > 0 ? wait : 0;
        p->deadline = ic_clock_s() + pool->config.case_timeout_s;
        return false;
    }
    struct ic_result res;
    if (ic_result_from_json(cJSON_GetObjectItemCaseSensitive(msg, "result"), &res) < 0) {
        memset(&res, 0, sizeof(res));
        ic_result_set(&res, IC_OUTCOME_ERROR,
                      "worker protocol violation: the result of the \"end\" message is malformed");
    }
    pool->stats.case_s += ic_clock_s() - p->began_at;
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(msg, "stages");
    bool warm = !p->current_forked && ic_case_warm(p, c);
    if (cJSON_GetArraySize(stages) == IC_STAGE_COUNT) {
        int i = 0;
        const cJSON *us;
        cJSON_ArrayForEach(us, stages)
        {
            if (cJSON_IsNumber(us) && us->valuedouble > 0) {
                pool->stats.stage_s[i] += us->valuedouble / 1e6;
                if (warm)
                    pool->stats.stage_warm_s[i] += us->valuedouble / 1e6;
            }
            i++;
        }
        pool->stats.warm_cases += warm;
    }
    on_result(context, p->case_index, &res);
    p->busy = false;
    return true;
}

/* The library worker `p` is importing for prewarming (a load sent during discovery, not
 * answered yet), or -1: such a load comes before anything the run asked of it. */
static int ic_prewarm_importing(const struct ic_pool *pool, const struct ic_proc *p)
{
    if (p != &pool->procs[1] || !pool->prewarm.on || p->spawns != pool->prewarm.spawns ||
        pool->prewarm.answered >= pool->prewarm.sent)
        return -1;
    return pool->prewarm.lib[pool->prewarm.answered];
}

static const char *ic_proc_importing(const struct ic_pool *pool, const struct ic_proc *p)
{
    int prewarming = ic_prewarm_importing(pool, p);
    if (prewarming >= 0)
        return pool->catalog->libs[prewarming].name;
    return p->npending ? pool->catalog->libs[p->pending[0]].name : "libraries";
}

/* A worker died importing a library after others: the same conflict discovery learns from
 * (ic_pool_discover), met later because this worker imported in another order. The library
 * is ordered before the ones the worker had, so the case can run again. Returns false when
 * the death had nothing to do with order (the library was the first to be imported). */
static bool ic_learn_import_order(struct ic_pool *pool, const struct ic_proc *p)
{
    struct ic_catalog *catalog = pool->catalog;
    /* A prewarming import follows discovery's own order: its death is no conflict to learn. */
    if (!p->npending || ic_libset_empty(&p->loaded) || ic_prewarm_importing(pool, p) >= 0)
        return false;
    int index = p->pending[0];
    struct ic_library *lib = &catalog->libs[index];
    /* Already known when another worker learned it while this one was importing. */
    if (ic_libset_merge(&lib->load_before, &p->loaded) < 0)
        return false;
    /* Move it before the first library it must precede in the order workers follow. */
    int from = -1, to = -1;
    for (int i = 0; i < catalog->order_count; i++) {
        if (catalog->order[i] == index)
            from = i;
        if (to < 0 && ic_libset_has(&p->loaded, catalog->order[i]))
            to = i;
    }
    if (from > to && to >= 0) {
        memmove(&catalog->order[to + 1], &catalog->order[to], sizeof(int) * (size_t)(from - to));
        catalog->order[to] = index;
    }
    return true;
}

/* The state of one ic_pool_run. */
struct ic_run_state {
    const struct ic_case *cases;
    size_t count, done;
    /* Cases to run again after an import-order conflict was learned (once each), and queued
     * cases of workers that went before starting them. */
    size_t *retry, nretry; /* at most 1 + IC_PIPELINE_DEPTH per worker */
    unsigned char *retried;
    /* Cases of isolated pairs, set aside until the plan is through (or, for pairs isolated
     * before the run, for a worker that never ran a case), each once (set_aside). */
    size_t *deferred, ndeferred, deferred_next;
    size_t *deferred_alike; /* room for ic_defer_alike */
    unsigned char *set_aside;
    /* The plan in library-set order: case indexes by (consumer, producer), each pair's in
     * plan order; a group is one pair's run of it. A worker slot takes the groups of one
     * consumer at a time, whose compiled kernels then live in one worker (and, when none is
     * left, the second half of the largest remainder another slot has), so that a worker keeps
     * its imports, a crashing pair's cases stay on one worker instead of crashing every worker
     * in turn, and the next case's libraries are loaded when it is pipelined. */
    size_t *order;
    size_t *pair_key;          /* per case */
    size_t *group_start;       /* where each pair's run of `order` starts, ngroups of them */
    size_t ngroups;
    /* The libraries the pairs not claimed yet need (catalog indexes), as worked out when the
     * first unclaimed pair was at `unclaimed_at` (ic_import_cost); SIZE_MAX: not yet. */
    unsigned char *unclaimed_libs;
    size_t unclaimed_at;
    size_t *cursor, *group_end; /* per slot: its place in `order` and its group's end */
    size_t claim;               /* where the first unclaimed group starts */
    unsigned char *slot_used; /* per worker slot: it has run a case in this run */
    unsigned char *declined;  /* per slot: declined to start a worker since its last start */
    /* What the cases that ended in this run occupied their workers for (ic_note_case_time):
     * the measure of the work a worker start would take over (ic_start_pays). */
    double work_s;
    size_t work_cases;
    ic_result_fn on_result;
    void *context;
};

/* --- Isolated pairs ------------------------------------------------------------------------ */

/* The key of a pair of libraries (catalog indexes plus one: 0 is a name the catalog lacks,
 * the reference consumer's); pool->isolated_pairs holds IC_PROTOCOL_COUNT bytes per key. */
static size_t ic_pair_key(const struct ic_pool *pool, const char *producer, const char *consumer)
{
    size_t libs = (size_t)pool->catalog->count + 1;
    int a = ic_catalog_find(pool->catalog, producer);
    int b = ic_catalog_find(pool->catalog, consumer);
    return (size_t)(a + 1) * libs + (size_t)(b + 1);
}

/* The producer's and the consumer's part of a pair key (ic_pair_key). */
static size_t ic_pair_key_producer(const struct ic_pool *pool, size_t key)
{
    return key / ((size_t)pool->catalog->count + 1);
}

static size_t ic_pair_key_consumer(const struct ic_pool *pool, size_t key)
{
    return key % ((size_t)pool->catalog->count + 1);
}

/* The byte of case `index`'s pair and protocol in pool->isolated_pairs: its pair key (worked
 * out once, when the plan was ordered) and its protocol. */
static size_t ic_pair_slot(const struct ic_run_state *st, size_t index)
{
    return st->pair_key[index] * IC_PROTOCOL_COUNT + (size_t)st->cases[index].protocol;
}

static bool ic_pair_isolated(const struct ic_pool *pool, const struct ic_run_state *st,
                             size_t index)
{
    return pool->isolated_pairs && pool->isolated_pairs[ic_pair_slot(st, index)];
}

/* Whether case `index` runs in a forked case child: a case of an isolated pair, unless it is
 * on a GPU or one of its libraries says a fork cannot use it (its probe's "fork": false). The
 * CUDA driver refuses every call in a child of a process that initialised it (each GPU
 * library's load() does, to count its devices), and JAX's CPU client waits in a fork for
 * threads load() started, which the fork lacks: such a case runs in the worker itself, set
 * aside like the others, and a crash costs that worker. */
static bool ic_case_forked(const struct ic_pool *pool, const struct ic_run_state *st, size_t index)
{
    const struct ic_case *c = &st->cases[index];
    return ic_pair_isolated(pool, st, index) && !ic_device_is_cuda(c->device) &&
           !ic_library_no_fork(pool->catalog, c->producer) &&
           !ic_library_no_fork(pool->catalog, c->consumer);
}

/* Whether isolated case `index`, which imports `needs`, goes to a lean worker: a process started
 * afresh that imports only what such cases need and forks its case children from itself, instead of
 * a worker holding every library, whose children cost 60-80 ms a crash (IC_LEAN_LOAD_MS_MAX). Only
 * where there is a large template (without one, a worker imports just what its cases need anyway;
 * of a small one, a fork is cheap), for a case forked from a worker, and for a pair whose libraries
 * discovery imported quickly, none of them one a lean worker failed to import in time. Discovery's
 * times are each library's share in its order, less than a fresh process pays where an earlier
 * library imported what this one needs: a lean worker that overruns IC_LEAN_IMPORT_MAX_S is given
 * up (ic_lean_failed). */
static bool ic_case_lean(const struct ic_pool *pool, const struct ic_run_state *st, size_t index,
                         const struct ic_needs *needs)
{
    if (pool->template.pid <= 0 || pool->template_mib < IC_LEAN_TEMPLATE_MIN_MIB ||
        st->retried[index] || !ic_case_forked(pool, st, index))
        return false; /* a case run again (ic_lean_failed among the reasons) never goes lean */
    double ms = 0;
    for (int n = 0; n < needs->count; n++) {
        if (ic_libset_has(&pool->lean_heavy, needs->lib[n]))
            return false;
        ms += pool->catalog->libs[needs->lib[n]].load_ms;
    }
    return ms <= IC_LEAN_LOAD_MS_MAX;
}

/* Marks byte `slot` of pool->isolated_pairs (ic_pair_slot). */
static int ic_isolate_slot(struct ic_pool *pool, size_t slot)
{
    size_t keys = (size_t)(pool->catalog->count + 1) * (size_t)(pool->catalog->count + 1);
    if (!pool->isolated_pairs)
        pool->isolated_pairs = calloc(keys * IC_PROTOCOL_COUNT, 1);
    if (!pool->isolated_pairs)
        return IC_ENOMEM;
    pool->isolated_pairs[slot] = 1;
    return 0;
}

/* A case of this pair crashed or hung: its later cases run isolated. Out of memory: they do
 * not, which costs time, not results. */
static void ic_isolate_pair(struct ic_pool *pool, const struct ic_run_state *st, size_t index)
{
    (void)ic_isolate_slot(pool, ic_pair_slot(st, index));
}

int ic_pool_isolate_pair(struct ic_pool *pool, const char *producer, const char *consumer,
                         enum ic_protocol protocol)
{
    size_t slot = ic_pair_key(pool, producer, consumer) * IC_PROTOCOL_COUNT + (size_t)protocol;
    if (pool->isolated_pairs && pool->isolated_pairs[slot])
        return 0;
    int rc = ic_isolate_slot(pool, slot);
    if (rc == 0)
        pool->stats.ledger_pairs++;
    return rc;
}

/* Gives `slot` its next run of `order`: the cases of the next unclaimed consumer's pairs, or
 * else the second half of the largest remainder another slot still has. False when nothing is
 * left. */
static bool ic_claim_group(const struct ic_pool *pool, struct ic_run_state *st, int slot)
{
    if (st->claim < st->count) {
        size_t start = st->claim, end = start + 1;
        size_t consumer = ic_pair_key_consumer(pool, st->pair_key[st->order[start]]);
        while (end < st->count &&
               ic_pair_key_consumer(pool, st->pair_key[st->order[end]]) == consumer)
            end++;
        st->cursor[slot] = start;
        st->group_end[slot] = end;
        st->claim = end;
        return true;
    }
    /* Nothing unclaimed: half of the largest remainder another slot still has. */
    int victim = -1;
    size_t most = 1;
    for (int j = 0; j < pool->nprocs; j++) {
        size_t left = st->group_end[j] - st->cursor[j];
        if (j != slot && left > most) {
            most = left;
            victim = j;
        }
    }
    if (victim < 0)
        return false;
    size_t middle = st->cursor[victim] + most / 2;
    st->cursor[slot] = middle;
    st->group_end[slot] = st->group_end[victim];
    st->group_end[victim] = middle;
    return true;
}

/* Case `index` (of an isolated pair) waits among the set-aside cases, once, after those there. */
static void ic_set_aside(struct ic_run_state *st, size_t index)
{
    if (!st->set_aside[index]) {
        st->set_aside[index] = 1;
        st->deferred[st->ndeferred++] = index;
    }
}

/* The slot's next case of the plan that is not isolated, without taking it (the isolated ones
 * before it are set aside). False when the plan is through for every slot. */
static bool ic_peek_plan_case(const struct ic_pool *pool, struct ic_run_state *st, int slot,
                              size_t *ret_index)
{
    for (;;) {
        while (st->cursor[slot] < st->group_end[slot]) {
            size_t index = st->order[st->cursor[slot]];
            if (!ic_pair_isolated(pool, st, index)) {
                *ret_index = index;
                return true;
            }
            ic_set_aside(st, index);
            st->cursor[slot]++;
        }
        if (!ic_claim_group(pool, st, slot))
            return false;
    }
}

static bool ic_isolated_server_elsewhere(const struct ic_pool *pool, int slot,
                                         const struct ic_needs *needs);

/* The next case for an idle worker: one to run again, else the plan's next (a case of an
 * isolated pair is set aside instead), else, once the plan is through, one set aside. False
 * when none is left to hand out. */
static bool ic_next_case(const struct ic_pool *pool, struct ic_run_state *st, int slot,
                         size_t *ret_index)
{
    if (st->nretry > 0) {
        *ret_index = st->retry[--st->nretry];
        return true;
    }
    /* A worker that never ran a case (one running, or the one the slot is about to start, as
     * after a crash) serves the isolated pairs first: it can fork for them now, and once it
     * runs a case itself it no longer can, and a worker would be started for them later. The
     * slot's own isolated cases ahead are set aside first: after a crash, the rest of the
     * crashing pair's cases, which the new worker thus runs forked at once. */
    const struct ic_proc *p = &pool->procs[slot];
    size_t index_planned = 0;
    bool planned = ic_peek_plan_case(pool, st, slot, &index_planned);
    if ((p->pid == 0 || !p->ran_in_process) && st->deferred_next < st->ndeferred &&
        ic_case_forked(pool, st, st->deferred[st->deferred_next])) {
        const struct ic_case *c = &st->cases[st->deferred[st->deferred_next]];
        struct ic_needs needs = ic_needed(pool, c->producer, c->consumer);
        if (!ic_isolated_server_elsewhere(pool, slot, &needs)) {
            *ret_index = st->deferred[st->deferred_next++];
            return true;
        }
    }
    if (planned) {
        *ret_index = index_planned;
        st->cursor[slot]++;
        return true;
    }
    if (st->deferred_next < st->ndeferred) {
        *ret_index = st->deferred[st->deferred_next++];
        return true;
    }
    return false;
}

static bool ic_pool_stopping(const struct ic_pool *pool)
{
    return (pool->config.stop && *pool->config.stop) || atomic_load(&pool->ending) >= 2;
}

/* A pool spun off discovery's, or one asked to end (ic_pool_end), has nothing more to do once
 * no worker is busy after ic_pool_assign: it starts no process, and sends nothing once asked
 * to end. */
static bool ic_pool_ended(const struct ic_pool *pool)
{
    if (!pool->spun_off && atomic_load(&pool->ending) == 0)
        return false;
    for (int j = 0; j < pool->nprocs; j++) {
        if (pool->procs[j].busy)
            return false;
    }
    return true;
}

/* Pipelining: each worker running a case of its own process gets the plan's next case as
 * well, when that case needs no import and is not isolated, so that it starts without a round
 * trip. A worker running a forked case gets none: it must stay one that never ran a case. */
static void ic_pool_queue(struct ic_pool *pool, struct ic_run_state *st)
{
    for (int j = 0; j < pool->nprocs && st->nretry == 0; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (!p->busy || !p->began || p->current_forked)
            continue;
        size_t index;
        while (p->nqueued < IC_PIPELINE_DEPTH && ic_peek_plan_case(pool, st, j, &index)) {
            const struct ic_case *c = &st->cases[index];
            struct ic_needs needed = ic_needed(pool, c->producer, c->consumer);
            bool loaded = true;
            for (int n = 0; n < needed.count; n++)
                loaded = loaded && ic_libset_has(&p->loaded, needed.lib[n]);
            if (!loaded)
                break;
            st->cursor[j]++;
            p->queued[p->nqueued++].index = index;
            if (ic_send_run(pool, p, c, &needed, false, true) < 0) {
                p->nqueued--; /* the worker is going: an idle one runs it */
                st->retry[st->nretry++] = index;
                break;
            }
        }
    }
}

/* --- Starting a worker only when it pays --------------------------------------------------- */

/* A case ended on `p`: what it occupied the worker for, from its request (or, pipelined, from
 * the end of the case before it) to its end, less its imports. */
static void ic_note_case_time(struct ic_run_state *st, const struct ic_proc *p)
{
    double seconds = ic_clock_s() - p->sent_at - p->import_s;
    st->work_s += seconds > 0 ? seconds : 0;
    st->work_cases++;
}

/* The case `slot` would be handed next, left where it is: one to run again, the first of the
 * next unclaimed pair, one of the largest remainder another slot has (the half it would take)
 * or one set aside. False when none is left. */
static bool ic_upcoming_case(const struct ic_pool *pool, const struct ic_run_state *st, int slot,
                             size_t *ret_index)
{
    size_t most = 1;
    if (st->nretry > 0) {
        *ret_index = st->retry[st->nretry - 1];
        return true;
    }
    if (st->claim < st->count) {
        *ret_index = st->order[st->claim];
        return true;
    }
    for (int j = 0; j < pool->nprocs; j++) {
        if (j != slot && st->group_end[j] - st->cursor[j] > most) {
            most = st->group_end[j] - st->cursor[j];
            *ret_index = st->order[st->group_end[j] - 1];
        }
    }
    if (most > 1)
        return true;
    if (st->deferred_next < st->ndeferred) {
        *ret_index = st->deferred[st->deferred_next];
        return true;
    }
    return false;
}

/* Seconds a worker holding `loaded` may spend importing for the work it would share: the
 * libraries of `needs` (its first case) and of every pair not claimed yet, as a started
 * worker goes on claiming whichever pairs are left, not only the next one. Each library
 * counts once, at discovery's time for it. */
static double ic_import_cost(const struct ic_pool *pool, struct ic_run_state *st,
                             const struct ic_libset *loaded, const struct ic_needs *needs)
{
    int nlibs = pool->catalog->count;
    size_t width = (size_t)nlibs + 1;
    /* The unclaimed pairs change only when a slot claims one: worked out once per claim. */
    if (st->unclaimed_at != st->claim) {
        memset(st->unclaimed_libs, 0, width);
        for (size_t g = 0; g < st->ngroups; g++) {
            if (st->group_start[g] < st->claim)
                continue;
            size_t key = st->pair_key[st->order[st->group_start[g]]];
            size_t producer = key / width, consumer = key % width; /* index + 1; 0: none */
            st->unclaimed_libs[producer] = 1; /* slot 0 (no library) is never read */
            st->unclaimed_libs[consumer] = 1;
        }
        st->unclaimed_at = st->claim;
    }
    double ms = 0;
    for (int i = 0; i < nlibs; i++) {
        bool first = false;
        for (int n = 0; n < needs->count; n++)
            first = first || needs->lib[n] == i;
        if ((first || st->unclaimed_libs[i + 1]) && !ic_libset_has(loaded, i))
            ms += pool->catalog->libs[i].load_ms;
    }
    return ms / 1000.0;
}

/* The work seen so far in this run (seconds, cases), the cases in flight counted with their
 * time so far, so that a slow or stuck case raises the measure while it runs; and how many
 * cases the workers hold (running or queued), which are not left to hand out. */
static void ic_observed_work(const struct ic_pool *pool, const struct ic_run_state *st,
                             double *ret_s, size_t *ret_cases, size_t *ret_held)
{
    double now = ic_clock_s();
    *ret_s = st->work_s;
    *ret_cases = st->work_cases;
    *ret_held = 0;
    for (int j = 0; j < pool->nprocs; j++) {
        const struct ic_proc *p = &pool->procs[j];
        *ret_held += (size_t)p->busy + (size_t)p->nqueued;
        if (p->busy && p->began) {
            double seconds = now - p->sent_at - p->import_s;
            *ret_s += seconds > 0 ? seconds : 0;
            (*ret_cases)++;
        }
    }
}

/* The running workers of slots other than `slot`; *ret_taker: one of them can run case
 * `index` as it is (no import-order conflict; for an isolated case, it never ran one itself). */
static int ic_other_workers(const struct ic_pool *pool, const struct ic_run_state *st, int slot,
                            size_t index, bool *ret_taker)
{
    const struct ic_case *c = &st->cases[index];
    struct ic_needs needs = ic_needed(pool, c->producer, c->consumer);
    bool isolate = ic_case_forked(pool, st, index);
    int running = 0;
    *ret_taker = false;
    for (int j = 0; j < pool->nprocs; j++) {
        const struct ic_proc *p = &pool->procs[j];
        if (j == slot || p->pid == 0)
            continue;
        running++;
        if (!ic_proc_conflicts(pool, p, &needs) && !(isolate && p->ran_in_process))
            *ret_taker = true;
    }
    return running;
}

/* How many times over a new worker's share of the work must outlast its start and imports.
 * Sharing work W with a worker that first imports for I seconds ends sooner when W > I, a share
 * (W/2 beside one running worker) over I/2. Twice I is asked: the mean taken from a run's first
 * cases overstates the rest (first calls into a library are slow; 2.3 times the run's mean on
 * numpy,torch,pyarrow), the new process makes those first calls again, and the workers share
 * the cores. */
#define IC_START_MARGIN 2.0

/* Whether idle `slot`, which has no worker, starts one (or a new one after its worker died).
 * A start costs the imports of the work it may take (discovery's times of the libraries of its
 * first case and of every pair not claimed yet, and the start itself). Its gain is the work it
 * takes over: with the running workers, an equal share of the cases not yet handed out, at the mean
 * time per case measured in this run. A start cannot be undone, so the mean is trusted only once
 * the running workers have spent the start's cost on cases: a start that pays comes at most that
 * late (ski rental), and on a small run none is made. The run never waits on a declining slot: a
 * slot still holding cases of its own, or with no running worker able to take its next case,
 * starts. */
static bool ic_start_pays(const struct ic_pool *pool, struct ic_run_state *st, int slot)
{
    size_t index, cases, held;
    bool taker;
    double work_s;
    if (st->cursor[slot] < st->group_end[slot] || !ic_upcoming_case(pool, st, slot, &index))
        return true;
    if (pool->template.pid > 0)
        return true; /* a copy of the template starts with every import, in milliseconds */
    /* A GPU case of a pair that crashed runs in a worker (not a forked child) and may kill it
     * as well: a running worker that takes it pays the same restart, so sharing these cases
     * out instead of starting costs the parallelism of the end of the run. */
    if (ic_pair_isolated(pool, st, index) && !ic_case_forked(pool, st, index))
        return true;
    int running = ic_other_workers(pool, st, slot, index, &taker);
    if (!taker)
        return true;
    const struct ic_case *c = &st->cases[index];
    struct ic_needs needs = ic_needed(pool, c->producer, c->consumer);
    double import_s =
        pool->start_s + ic_import_cost(pool, st, &pool->procs[slot].loaded, &needs);
    if (import_s <= 0)
        return true;
    ic_observed_work(pool, st, &work_s, &cases, &held);
    if (work_s < import_s)
        return false;
    size_t left = st->count - st->done > held ? st->count - st->done - held : 0;
    return (double)left * (work_s / (double)cases) / (running + 1) > IC_START_MARGIN * import_s;
}

/* Another slot's worker serves isolated cases (it never ran one itself) and can take one that
 * needs `needs`: the case waits for it rather than having `slot` start a worker, or stop the
 * one it has, and import the pair again. Isolated cases are few and quick once the pair is
 * imported, and one worker's case child runs them in turn. */
static bool ic_isolated_server_elsewhere(const struct ic_pool *pool, int slot,
                                         const struct ic_needs *needs)
{
    for (int j = 0; j < pool->nprocs; j++) {
        const struct ic_proc *q = &pool->procs[j];
        if (j != slot && q->pid > 0 && q->current_forked && !q->ran_in_process &&
            !ic_proc_conflicts(pool, q, needs))
            return true;
    }
    return false;
}

/* Puts back the case ic_next_case just handed out: it was the last one taken from the set-aside
 * ones or from the retries. */
static void ic_unget_case(struct ic_run_state *st, size_t index)
{
    if (st->deferred_next > 0 && st->deferred[st->deferred_next - 1] == index)
        st->deferred_next--;
    else
        st->retry[st->nretry++] = index;
}

/* Hands a case to every idle worker. IC_ECHILD when no worker process can be started. */
static int ic_pool_assign(struct ic_pool *pool, struct ic_run_state *st)
{
    char how[256], what[400];
    size_t index;
    if (atomic_load(&pool->ending))
        return 0; /* what was sent finishes; nothing more goes out */
    for (int j = 0; j < pool->nprocs; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (p->busy || (p->pid == 0 && pool->spun_off))
            continue;
        if (p->pid == 0 && !ic_start_pays(pool, st, j)) {
            st->declined[j] = 1; /* a running worker takes its cases */
            continue;
        }
        if (!ic_next_case(pool, st, j, &index))
            continue; /* another idle slot may still hold cases of its own */
        const struct ic_case *c = &st->cases[index];
        struct ic_needs needed = ic_needed(pool, c->producer, c->consumer);
        bool isolate = ic_case_forked(pool, st, index);
        bool lean = isolate && ic_case_lean(pool, st, index, &needed);
        /* Without a template a worker for it would import the pair again: the case waits for
         * the one serving isolated cases. With one, a copy costs milliseconds, and a second
         * server halves the end of a run that is isolated cases alone (the first --all in an
         * environment ends with tensorflow's crashing pairs: 4-5 s on one core otherwise). */
        if (isolate && (p->pid == 0 || p->ran_in_process) && pool->template.pid <= 0 &&
            ic_isolated_server_elsewhere(pool, j, &needed)) {
            ic_unget_case(st, index);
            continue;
        }
        /* An isolated case is forked from a worker that never ran a case itself: a process
         * that ran libraries' code may hold threads and locks a forked child cannot use.
         * Imports alone are fine (the two libraries were imported together when the case
         * crashed), so one such worker serves every isolated case. A lean worker serves only
         * the cases it is for, and those only it: a copy takes its slot for anything else. */
        bool unfit =
            p->pid && (ic_proc_conflicts(pool, p, &needed) || (isolate && p->ran_in_process));
        /* Going lean and back is the plan's, not a worker lost: no restart. */
        bool lean_switch = p->pid && !unfit && p->lean != lean;
        if (unfit || lean_switch)
            ic_proc_stop(pool, p);
        if (p->pid == 0 && pool->spun_off) {
            ic_unget_case(st, index); /* left for the discovering pool's run */
            continue;
        }
        if (p->pid == 0) {
            if (lean)
                ic_pool_reap_strays(pool);
            if ((lean ? ic_proc_spawn_fresh(pool, p) : ic_proc_spawn(pool, p)) < 0)
                return IC_ECHILD;
            p->lean = lean;
            pool->stats.workers_started++;
            pool->stats.lean_workers += lean;
            if (st->slot_used[j] && !lean_switch)
                pool->stats.restarts++;
            st->declined[j] = 0;
        }
        st->slot_used[j] = 1;
        if (isolate)
            pool->stats.isolated_cases++;
        p->ran_in_process = p->ran_in_process || !isolate;
        p->current_forked = isolate;
        p->case_pid = 0;
        p->flaw_rule = IC_RULE_NONE;
        p->sent_at = ic_clock_s();
        p->import_s = 0;
        p->busy = true;
        p->began = false;
        p->child_pid = 0;
        p->child_signal = 0;
        p->case_index = index;
        p->deadline = ic_clock_s() + (lean && IC_LEAN_IMPORT_MAX_S < pool->config.load_timeout_s
                                          ? IC_LEAN_IMPORT_MAX_S
                                          : pool->config.load_timeout_s);
        if (ic_send_run(pool, p, c, &needed, isolate, false) < 0) {
            ic_proc_reap(p, how, sizeof(how));
            snprintf(what, sizeof(what), "the worker ended (%s) before the case was sent", how);
            ic_deliver_failure(pool, p, c, IC_OUTCOME_ERROR, what, st->on_result, st->context);
            st->done++;
        }
    }
    ic_pool_queue(pool, st);
    return 0;
}

/* The current case ended: the first queued one, if any, becomes current. It has begun: a
 * queued case imports nothing and is not forked (ic_pool_queue), so the worker starts it the
 * moment it has sent the "end" of the one before, and sends no "begin" for it ("pipelined").
 * On --all that was 65 000 of 67 000 messages the workers wrote and the supervisor read. */
static void ic_proc_promote(struct ic_pool *pool, struct ic_proc *p)
{
    if (p->nqueued == 0)
        return;
    p->seq = p->queued[0].seq;
    memcpy(p->case_id, p->queued[0].id, sizeof(p->case_id));
    p->case_index = p->queued[0].index;
    p->nqueued--;
    memmove(p->queued, p->queued + 1, (size_t)p->nqueued * sizeof(p->queued[0]));
    p->busy = true;
    p->began = true;
    p->current_forked = false;
    p->case_pid = p->pid;
    p->flaw_rule = IC_RULE_NONE;
    p->child_pid = 0;
    p->child_signal = 0;
    p->npending = 0;
    p->sent_at = ic_clock_s();
    p->began_at = p->sent_at;
    p->import_s = 0;
    p->deadline = p->sent_at + pool->config.case_timeout_s;
}

/* The worker is gone before its queued cases began: they run elsewhere, in their order (the
 * retries are taken from the end). Those of a pair isolated by now (the crash that took the
 * worker) are set aside with the pair's other cases, for a worker that forks them, instead of
 * sending a worker that ran cases itself to start again for each. So are that pair's cases
 * already among the retries: a case whose request found the worker gone (ic_pool_queue, when
 * the worker died between the supervisor's read of its last "end" and the next request) went
 * there before the death was known, and the retries go first, ahead of the order
 * ic_defer_alike gives the pair's cases (seen once in a full test run under load: a case of
 * the crashing dtype ran right after the first crash). */
static void ic_proc_requeue(const struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    for (int i = 0; i < p->nqueued; i++) {
        size_t index = p->queued[i].index;
        if (ic_pair_isolated(pool, st, index))
            ic_set_aside(st, index);
    }
    size_t kept = 0;
    for (size_t i = 0; i < st->nretry; i++) {
        size_t index = st->retry[i];
        if (ic_pair_isolated(pool, st, index) && !st->set_aside[index])
            ic_set_aside(st, index);
        else
            st->retry[kept++] = index;
    }
    st->nretry = kept;
    while (p->nqueued > 0) {
        size_t index = p->queued[--p->nqueued].index;
        if (!ic_pair_isolated(pool, st, index))
            st->retry[st->nretry++] = index;
    }
}

/* Worker `p`, gone before its case began for a reason that is not the case's, hands its case
 * (and the queued ones) back to run again, once: the caller checked st->retried and room. */
static void ic_proc_retry_case(const struct ic_pool *pool, struct ic_proc *p,
                               struct ic_run_state *st)
{
    st->retried[p->case_index] = 1;
    st->retry[st->nretry++] = p->case_index;
    p->busy = false;
    ic_libset_clear(&p->loaded);
    ic_proc_requeue(pool, p, st);
}

/* Worker `p` died or hung in a prewarming import (one sent during discovery), before its case
 * began: no case's failure, as the run never asked for that import. The worker is given up
 * with the prewarming, and its cases run again (once), where the slot's next worker or another
 * slot takes them. False when that is not what happened. */
static bool ic_prewarm_failed(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    if (p->began || ic_prewarm_importing(pool, p) < 0 || st->retried[p->case_index] ||
        st->nretry + 1 + (size_t)p->nqueued > (1 + IC_PIPELINE_DEPTH) * (size_t)pool->nprocs)
        return false;
    ic_proc_kill(p);
    ic_proc_retry_case(pool, p, st);
    ic_prewarm_stop(pool);
    return true;
}

/* A lean worker (ic_case_lean) that did not reach its case's start within
 * IC_LEAN_IMPORT_MAX_S, or died before it: no case's failure, as a copy of the template holds
 * those imports already. The libraries it had still to import (or, with none left, the case's
 * own) are not given a lean worker again, and the case runs again, once, where the slot's next
 * worker, a copy, forks it. False when that is not what happened. */
static bool ic_lean_failed(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    if (!p->lean || p->began || st->retried[p->case_index] ||
        st->nretry + 1 + (size_t)p->nqueued > (1 + IC_PIPELINE_DEPTH) * (size_t)pool->nprocs)
        return false;
    const struct ic_case *c = &st->cases[p->case_index];
    struct ic_needs needs = ic_needed(pool, c->producer, c->consumer);
    /* Out of memory: the library may be tried lean again, and given up again, in time. */
    for (int i = 0; i < p->npending; i++)
        (void)ic_libset_add(&pool->lean_heavy, p->pending[i]);
    for (int n = 0; p->npending == 0 && n < needs.count; n++)
        (void)ic_libset_add(&pool->lean_heavy, needs.lib[n]);
    ic_proc_kill(p);
    ic_proc_retry_case(pool, p, st);
    return true;
}

/* Case `index` crashed or hung: the set-aside cases of its pair and protocol in the same
 * layout or the same dtype, not handed out yet, go after the pair's others, in their order. What
 * kills a consumer most often kills it in every dtype of a layout (TensorFlow aborts on each
 * offset capsule) or every layout of a dtype, and each of those deaths costs a fresh child: run
 * last, they no longer cut the others' run into a fresh child each, whose first case pays every
 * cold cache again (30-40 ms a crash for TensorFlow's first operation). They stay before the
 * next pair's cases, so that a worker serving one pair is not replaced for another (a lean
 * one) and back. It moves cases, never an outcome. The pair's cases the plan has not reached
 * yet are set aside first (in plan order, after the ones the worker held), so that all of them
 * are ordered: set aside only as the plan reached them, they came after the alike ones (a
 * worker holding fewer than the pair's remaining cases when it died, as under load). */
static void ic_defer_alike(const struct ic_pool *pool, struct ic_run_state *st, size_t index)
{
    const struct ic_case *crashed = &st->cases[index];
    size_t slot = ic_pair_slot(st, index); /* the pair and protocol */
    /* Not handed out: each slot's run from its cursor, and what no slot has claimed. */
    for (int j = 0; ic_pair_isolated(pool, st, index) && j <= pool->nprocs; j++) {
        size_t from = j < pool->nprocs ? st->cursor[j] : st->claim;
        size_t to = j < pool->nprocs ? st->group_end[j] : st->count;
        for (size_t k = from; k < to; k++) {
            if (ic_pair_slot(st, st->order[k]) == slot)
                ic_set_aside(st, st->order[k]);
        }
    }
    size_t last = st->ndeferred; /* the pair's last set-aside case not handed out */
    for (size_t i = st->deferred_next; i < st->ndeferred; i++) {
        if (ic_pair_slot(st, st->deferred[i]) == slot)
            last = i;
    }
    if (last == st->ndeferred)
        return;
    size_t kept = st->deferred_next, moved = 0;
    for (size_t i = st->deferred_next; i <= last; i++) {
        const struct ic_case *c = &st->cases[st->deferred[i]];
        bool alike = ic_pair_slot(st, st->deferred[i]) == slot &&
                     (c->layout == crashed->layout || c->dtype == crashed->dtype);
        if (alike)
            st->deferred_alike[moved++] = st->deferred[i];
        else
            st->deferred[kept++] = st->deferred[i];
    }
    memcpy(&st->deferred[kept], st->deferred_alike, moved * sizeof(*st->deferred));
}

/* A busy worker ended (or closed its channel) before its case's end: a crash, an error
 * before the case began, or an import-order conflict learned and the case queued again. */
static void ic_proc_died(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    char how[256], what[400];
    ic_proc_reap(p, how, sizeof(how));
    if (ic_prewarm_failed(pool, p, st) || ic_lean_failed(pool, p, st))
        return;
    if (!p->began && st->nretry < (size_t)pool->nprocs && !st->retried[p->case_index] &&
        ic_learn_import_order(pool, p)) {
        ic_proc_retry_case(pool, p, st);
        return;
    }
    if (p->began) {
        snprintf(what, sizeof(what), "the worker died with %s during this case", how);
        ic_isolate_pair(pool, st, p->case_index);
    } else
        snprintf(what, sizeof(what),
                 "the worker died with %s before the case began (importing %s)", how,
                 ic_proc_importing(pool, p));
    ic_proc_requeue(pool, p, st); /* after the pair is isolated */
    if (p->began)
        ic_defer_alike(pool, st, p->case_index);
    ic_deliver_failure(pool, p, &st->cases[p->case_index],
                       p->began ? IC_OUTCOME_CRASH : IC_OUTCOME_ERROR, what, st->on_result,
                       st->context);
    ic_libset_clear(&p->loaded);
    st->done++;
}

/* The worker broke the channel's rules: its group is killed, the case is the tool's error. */
static void ic_proc_violated(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st,
                             const char *why)
{
    char what[400];
    ic_proc_kill(p);
    ic_proc_requeue(pool, p, st);
    snprintf(what, sizeof(what), "worker protocol violation: %s", why);
    ic_deliver_failure(pool, p, &st->cases[p->case_index], IC_OUTCOME_ERROR, what, st->on_result,
                       st->context);
    ic_libset_clear(&p->loaded);
    st->done++;
}

/* The forked process of an isolated case ended before its "end" ("lost"): the case is a crash
 * (an error when it had not begun), and the worker, which kept its imports, runs the next. */
static void ic_proc_lost(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st,
                         const cJSON *msg)
{
    char what[300], name[32];
    const char *how = ic_json_string_or(msg, "how", "");
    int number = 0;
    ic_proc_drain_output(p); /* the child's last words are in the pipe already */
    ic_proc_drain_events(p); /* and its death, when a signal killed it */
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(msg, "pid");
    if (p->child_pid && cJSON_IsNumber(pid) && (double)p->child_pid == pid->valuedouble)
        p->child_pid = 0; /* the case's own process, not a child the case started */
    /* Worded as a worker's death, which it is to the case: the finding's signature (the text
     * before "; ") stays the one of the same crash in a worker that ran the case itself. */
    if (sscanf(how, "signal %d", &number) == 1)
        snprintf(what, sizeof(what), "the worker died with %s during this case",
                 ic_signal_name(number, name, sizeof(name)));
    else
        snprintf(what, sizeof(what), "the worker died with %s during this case", how);
    p->forked = true;
    if (p->began)
        ic_defer_alike(pool, st, p->case_index);
    ic_deliver_failure(pool, p, &st->cases[p->case_index],
                       p->began ? IC_OUTCOME_CRASH : IC_OUTCOME_ERROR, what, st->on_result,
                       st->context);
    st->done++;
}

/* Reads what worker `p` sent and handles every complete message. */
/* Handles the next message worker `p` sent, if a whole one has come: true when there may be
 * another to read. */
static bool ic_proc_read_one(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    char why[300];
    int error = 0;
    enum ic_message kind;
    cJSON *msg = ic_framebuf_next(&p->in, &error, why, sizeof(why));
    if (!msg && !error)
        return false;
    if (msg && p == &pool->procs[1] && ic_prewarm_answer(pool, msg)) {
        p->deadline = ic_clock_s() + pool->config.load_timeout_s;
        cJSON_Delete(msg);
        return true;
    }
    if (msg && ic_proc_accept(p, msg, &kind, why, sizeof(why)) == 0) {
        const char *violation = ic_json_string(msg, "violation");
        if (kind == IC_MSG_LOST && violation) {
            /* The worker saw the case forge its child's answer: a violation as any other. */
            snprintf(why, sizeof(why), "%s", violation);
            cJSON_Delete(msg);
            ic_proc_violated(pool, p, st, why);
            return false;
        } else if (kind == IC_MSG_LOST) {
            ic_note_case_time(st, p);
            ic_proc_lost(pool, p, st, msg);
            ic_proc_promote(pool, p);
        } else if (ic_handle_message(pool, p, msg, kind, &st->cases[p->case_index],
                                     st->on_result, st->context)) {
            ic_note_case_time(st, p);
            st->done++;
            ic_proc_promote(pool, p);
        }
        cJSON_Delete(msg);
        return true;
    }
    cJSON_Delete(msg);
    ic_proc_violated(pool, p, st, why);
    return false;
}

static void ic_proc_read(struct ic_pool *pool, struct ic_proc *p, struct ic_run_state *st)
{
    int got = ic_framebuf_fill(&p->in, p->fd);
    bool more = true;
    while (p->busy && more) {
        /* A message, its result and the stream line written of it keep no cJSON node past
         * their handling (ic_json.h), while a "loaded" answer's info is kept in the catalog
         * only by discovery, which reads its worker elsewhere (ic_pool_load). */
        ic_json_arena_begin();
        more = ic_proc_read_one(pool, p, st);
        ic_json_arena_end();
    }
    if (p->busy && got <= 0 && got != IC_EAGAIN) {
        if (ic_framebuf_partial(&p->in))
            ic_proc_violated(pool, p, st, "the channel closed in the middle of a frame");
        else
            ic_proc_died(pool, p, st);
    }
}

/* While every busy worker holds half a pipeline of cases or more, the supervisor lets their
 * messages gather for half the time the fewest held take (by the run's mean case so far, at
 * most IC_COALESCE_MAX_S) before it reads them, so that one wakeup reads many. Woken by each
 * message, it took a context switch a case from the workers it shares the cores with
 * (~8 000 a run of the harness selection's 19 402 cases, 0.7 s of its CPU). No worker waits
 * for it meanwhile: each has work for twice the pause. A worker importing, or running a forked
 * case, holds none, and is answered at once. */
static void ic_pool_coalesce(const struct ic_pool *pool, const struct ic_run_state *st)
{
    int fewest = IC_PIPELINE_DEPTH, busy = 0;
    for (int j = 0; j < pool->nprocs; j++) {
        const struct ic_proc *p = &pool->procs[j];
        if (p->busy && p->nqueued < fewest)
            fewest = p->nqueued;
        busy += p->busy;
    }
    if (busy == 0 || fewest < IC_PIPELINE_DEPTH / 2 || st->work_cases < IC_PIPELINE_DEPTH)
        return;
    double pause = fewest * (st->work_s / (double)st->work_cases) / 2;
    if (pause > IC_COALESCE_MAX_S)
        pause = IC_COALESCE_MAX_S;
    struct timespec ts = {0, (long)(pause * 1e9)};
    nanosleep(&ts, NULL);
}

/* Waits for the busy workers and handles what they sent, their ends and their deadlines. */
static int ic_pool_wait(struct ic_pool *pool, struct ic_run_state *st)
{
    struct pollfd *fds = pool->fds;
    int *owner = pool->owner, nfds = 0;
    /* At most 100 ms: a worker can end while a child it forked keeps its socket open, and
     * an interruption is noticed within that time. */
    double now = ic_clock_s(), wait = 0.1;
    for (int j = 0; j < pool->nprocs; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (!p->busy)
            continue;
        int fd[3] = {p->fd, p->out_fd, p->ev_fd};
        for (int f = 0; f < 3; f++) {
            fds[nfds] = (struct pollfd){.fd = fd[f], .events = POLLIN};
            owner[nfds++] = j;
        }
        if (p->deadline - now < wait)
            wait = p->deadline - now;
    }
    if (nfds == 0)
        return 0;
    ic_pool_coalesce(pool, st);
    int n = poll(fds, (nfds_t)nfds, wait > 0 ? (int)(wait * 1000) + 1 : 0);
    if (n < 0 && errno != EINTR)
        return IC_EIO;
    for (int k = 0; n > 0 && k < nfds; k++) {
        struct ic_proc *p = &pool->procs[owner[k]];
        if (!fds[k].revents || !p->busy)
            continue;
        if (k % 3 == 1)
            ic_proc_drain_output(p);
        else if (k % 3 == 2)
            ic_proc_drain_events(p);
        else
            ic_proc_read(pool, p, st);
    }
    for (int j = 0; j < pool->nprocs; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (p->busy && ic_proc_ended(p)) {
            ic_proc_drain_events(p);
            ic_proc_read(pool, p, st); /* what it sent before it ended still counts */
            if (p->busy)
                ic_proc_died(pool, p, st);
        }
    }
    return 0;
}

/* Ends the cases whose worker passed its deadline. */
static void ic_pool_expire(struct ic_pool *pool, struct ic_run_state *st)
{
    char what[400];
    double now = ic_clock_s();
    for (int j = 0; j < pool->nprocs; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (!p->busy || now < p->deadline)
            continue;
        if (ic_framebuf_partial(&p->in)) {
            ic_proc_violated(pool, p, st, "the worker stopped in the middle of a frame");
            continue;
        }
        if (ic_prewarm_failed(pool, p, st) || ic_lean_failed(pool, p, st))
            continue;
        if (p->began)
            ic_proc_abort(p); /* its Python stack, for the diagnostic */
        ic_proc_drain_output(p);
        ic_proc_drain_events(p);
        ic_proc_kill(p);
        if (p->began) {
            snprintf(what, sizeof(what), "no result after %.0f s: the worker was killed",
                     pool->config.case_timeout_s);
            ic_isolate_pair(pool, st, p->case_index);
        } else
            snprintf(what, sizeof(what), "importing %s took longer than %g s%s",
                     ic_proc_importing(pool, p),
                     p->lean ? IC_LEAN_IMPORT_MAX_S : pool->config.load_timeout_s,
                     p->lean ? " (a lean worker's budget)" : "");
        ic_proc_requeue(pool, p, st); /* after the pair is isolated */
        if (p->began)
            ic_defer_alike(pool, st, p->case_index);
        ic_deliver_failure(pool, p, &st->cases[p->case_index],
                           p->began ? IC_OUTCOME_TIMEOUT : IC_OUTCOME_ERROR, what, st->on_result,
                           st->context);
        ic_libset_clear(&p->loaded);
        st->done++;
    }
}

/* An interruption: the cases in flight get no result and their workers' groups are killed. */
static void ic_pool_abandon(struct ic_pool *pool)
{
    for (int j = 0; j < pool->nprocs; j++) {
        struct ic_proc *p = &pool->procs[j];
        if (p->pid)
            ic_proc_kill(p);
        p->busy = false;
        p->nqueued = 0;
        ic_libset_clear(&p->loaded);
    }
}

/* Sorts the plan into library-set order (struct ic_run_state): by consumer, then producer,
 * then plan order. */
struct ic_keyed_case {
    size_t key, index;
};

static int ic_keyed_compare(const void *a, const void *b)
{
    const struct ic_keyed_case *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int ic_order_by_pair(const struct ic_pool *pool, struct ic_run_state *st)
{
    size_t n = st->count ? st->count : 1;
    struct ic_keyed_case *keyed = calloc(n, sizeof(*keyed));
    st->order = calloc(n, sizeof(*st->order));
    st->pair_key = calloc(n, sizeof(*st->pair_key));
    if (!keyed || !st->order || !st->pair_key) {
        free(keyed);
        return IC_ENOMEM;
    }
    size_t libs = (size_t)pool->catalog->count + 1;
    for (size_t i = 0; i < st->count; i++) {
        st->pair_key[i] = ic_pair_key(pool, st->cases[i].producer, st->cases[i].consumer);
        size_t by_consumer = ic_pair_key_consumer(pool, st->pair_key[i]) * libs +
                             ic_pair_key_producer(pool, st->pair_key[i]);
        keyed[i] = (struct ic_keyed_case){by_consumer, i};
    }
    qsort(keyed, st->count, sizeof(*keyed), ic_keyed_compare);
    for (size_t i = 0; i < st->count; i++)
        st->order[i] = keyed[i].index;
    free(keyed);
    /* The pairs' runs, for what the work not yet claimed needs imported (ic_import_cost). */
    st->group_start = calloc(n, sizeof(*st->group_start));
    if (!st->group_start)
        return IC_ENOMEM;
    for (size_t i = 0; i < st->count; i++) {
        if (i == 0 || st->pair_key[st->order[i]] != st->pair_key[st->order[i - 1]])
            st->group_start[st->ngroups++] = i;
    }
    /* The cases of pairs isolated before the run are set aside now, in library-set order, so
     * that a worker that never ran a case can take them first (ic_next_case). */
    for (size_t i = 0; i < st->count; i++) {
        if (ic_pair_isolated(pool, st, st->order[i]))
            ic_set_aside(st, st->order[i]);
    }
    return 0;
}

static void ic_run_state_release(struct ic_run_state *st)
{
    free(st->retried);
    free(st->deferred_alike);
    free(st->retry);
    free(st->deferred);
    free(st->set_aside);
    free(st->slot_used);
    free(st->declined);
    free(st->cursor);
    free(st->group_end);
    free(st->order);
    free(st->pair_key);
    free(st->group_start);
    free(st->unclaimed_libs);
}

int ic_pool_run(struct ic_pool *pool, const struct ic_case *cases, size_t count,
                ic_result_fn on_result, void *context)
{
    struct ic_run_state st = {.cases = cases, .count = count, .on_result = on_result,
                              .context = context};
    int rc = 0;
    st.retried = calloc(count ? count : 1, 1);
    st.deferred_alike = calloc(count ? count : 1, sizeof(*st.deferred_alike));
    st.retry = calloc((1 + IC_PIPELINE_DEPTH) * (size_t)pool->nprocs, sizeof(*st.retry));
    st.deferred = calloc(count ? count : 1, sizeof(*st.deferred));
    st.set_aside = calloc(count ? count : 1, 1);
    st.slot_used = calloc((size_t)pool->nprocs, 1);
    st.declined = calloc((size_t)pool->nprocs, 1);
    st.unclaimed_libs = calloc((size_t)pool->catalog->count + 1, 1);
    st.unclaimed_at = SIZE_MAX;
    st.cursor = calloc((size_t)pool->nprocs, sizeof(*st.cursor));
    st.group_end = calloc((size_t)pool->nprocs, sizeof(*st.group_end));
    if (!st.retried || !st.retry || !st.deferred || !st.deferred_alike || !st.set_aside ||
        !st.slot_used || !st.declined || !st.unclaimed_libs || !st.cursor || !st.group_end ||
        ic_order_by_pair(pool, &st) < 0) {
        ic_run_state_release(&st);
        return IC_ENOMEM;
    }
    /* What each slot's process already imported (in discovery) is no re-import. */
    for (int j = 0; j < pool->nprocs; j++)
        ic_libset_merge(&pool->procs[j].ever_loaded, &pool->procs[j].loaded);
    while (st.done < count && rc == 0) {
        if (ic_pool_stopping(pool)) {
            ic_pool_abandon(pool);
            rc = IC_EINTR;
            break;
        }
        rc = ic_pool_assign(pool, &st);
        if (rc == 0 && ic_pool_ended(pool)) {
            rc = IC_EAGAIN;
            break;
        }
        if (rc == 0)
            rc = ic_pool_wait(pool, &st);
        if (rc == 0)
            ic_pool_expire(pool, &st);
    }
    for (int j = 0; j < pool->nprocs; j++)
        pool->stats.starts_declined += st.declined[j];
    if (pool->spun_off)
        pool->stats.early_cases += st.done;
    ic_run_state_release(&st);
    return rc;
}

void ic_pool_stats(const struct ic_pool *pool, struct ic_pool_stats *ret)
{
    *ret = pool->stats;
}

/* --- Cases run while discovery imports ----------------------------------------------------- */

bool ic_pool_may_spin_off(const struct ic_pool *pool)
{
    const struct ic_proc *source = &pool->procs[0];
    const struct ic_catalog *catalog = pool->catalog;
    /* procs[1] running during discovery is a prewarming worker: a third process would share
     * the cores with two importing. */
    if (pool->nprocs < 2 || pool->spun_off || pool->spin_off_failed || !ic_pool_may_copy(pool) ||
        source->pid <= 0 || source->ran_in_process || pool->procs[1].pid != 0 ||
        catalog->order_count == 0)
        return false;
    for (int i = 0; i < catalog->order_count; i++) {
        if (ic_library_blocks_copies(&catalog->libs[catalog->order[i]]))
            return false;
    }
    return true;
}

int ic_pool_spin_off(struct ic_pool *pool, struct ic_pool **ret)
{
    int free_slot = pool->spun_off_pids[0] == 0 ? 0 : pool->spun_off_pids[1] == 0 ? 1 : -1;
    if (!ic_pool_may_spin_off(pool) || free_slot < 0)
        return IC_EUNSUPPORTED;
    struct ic_supervisor_config config = pool->config;
    config.jobs = 1;
    config.no_copies = true;
    struct ic_catalog *catalog = calloc(1, sizeof(*catalog));
    struct ic_pool *off = catalog ? ic_pool_new(&config, catalog) : NULL;
    if (!off || ic_catalog_copy(pool->catalog, catalog) < 0) {
        free(catalog);
        if (off)
            ic_pool_destroy(off);
        return IC_ENOMEM;
    }
    off->own_catalog = catalog;
    off->spun_off = true;
    off->next_seq = pool->next_seq;
    /* Slot 1: the slot it stands in for, for probes that tell workers apart. */
    if (ic_proc_copy(pool, &pool->procs[0], &off->procs[0], 1) < 0) {
        pool->spin_off_failed = true;
        ic_pool_destroy(off);
        /* A copy that timed out cost discovery its worker: the imports so far are made again. */
        if (pool->procs[0].pid <= 0)
            ic_pool_restore(pool, &pool->procs[0]);
        return IC_ECHILD;
    }
    pool->spun_off_pids[free_slot] = off->procs[0].pid;
    off->stats.early_workers = 1;
    *ret = off;
    return 0;
}

void ic_pool_end(struct ic_pool *pool, bool abandon)
{
    int want = abandon ? 2 : 1;
    int now = atomic_load(&pool->ending);
    while (now < want && !atomic_compare_exchange_weak(&pool->ending, &now, want))
        ;
}

void ic_pool_absorb(struct ic_pool *pool, struct ic_pool *off)
{
    if (!off)
        return;
    /* Killed, not asked to quit, and not waited for: what it ran is delivered, and a process
     * holding the libraries takes tens of milliseconds to end, on its own or killed, which
     * discovery would wait. Its end is reaped with the strays. */
    for (int j = 0; j < off->nprocs; j++) {
        struct ic_proc *p = &off->procs[j];
        for (int k = 0; k < 2; k++) {
            if (p->pid > 0 && pool->spun_off_pids[k] == p->pid)
                pool->spun_off_pids[k] = 0;
        }
        if (p->pid > 0) {
            kill(-p->pid, SIGKILL);
            kill(p->pid, SIGKILL);
            ic_proc_close_fds(p);
            p->pid = 0;
        }
    }
    const struct ic_pool_stats *from = &off->stats;
    struct ic_pool_stats *to = &pool->stats;
    to->workers_started += from->workers_started;
    to->copies += from->copies;
    to->restarts += from->restarts;
    to->isolated_cases += from->isolated_cases;
    to->import_s += from->import_s;
    to->reimport_s += from->reimport_s;
    to->case_s += from->case_s;
    to->wait_s += from->wait_s;
    for (int i = 0; i < IC_STAGE_COUNT; i++) {
        to->stage_s[i] += from->stage_s[i];
        to->stage_warm_s[i] += from->stage_warm_s[i];
    }
    to->warm_cases += from->warm_cases;
    to->early_cases += from->early_cases;
    to->early_workers += from->early_workers;
    /* A pair that crashed or hung there is isolated here too: the catalogs index alike. */
    size_t slots = (size_t)(pool->catalog->count + 1) * (size_t)(pool->catalog->count + 1) *
                   IC_PROTOCOL_COUNT;
    for (size_t slot = 0; off->isolated_pairs && slot < slots; slot++) {
        if (off->isolated_pairs[slot])
            (void)ic_isolate_slot(pool, slot); /* out of memory: it may crash a worker again */
    }
    ic_pool_destroy(off);
}

bool ic_pool_pair_isolated(const struct ic_pool *pool, const char *producer, const char *consumer,
                           enum ic_protocol protocol)
{
    size_t slot = ic_pair_key(pool, producer, consumer) * IC_PROTOCOL_COUNT + (size_t)protocol;
    return pool->isolated_pairs && pool->isolated_pairs[slot];
}
