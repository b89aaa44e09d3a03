#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_exchange.h"
#include "ic_ipc.h"
#include "ic_json.h"
#include "ic_probe.h"
#include "ic_python.h"
#include "ic_text.h"

struct ic_worker {
    int fd;
    struct ic_exchange_cache exchange; /* carried from case to case (ic_exchange.h) */
    unsigned long long seq;            /* of the request being answered */
    struct ic_probe *probes;           /* count loaded, room for capacity (owned) */
    int count;
    size_t capacity;
    /* Probes opened without their load() (ic_probe_open), for reproducers only: writing one
     * reads the probes' REPRO text and needs no library imported. */
    struct ic_probe *opened;
    int nopened;
    size_t opened_capacity;
    /* The child that runs isolated cases (ic_worker_run_forked): its pid (0: none), the
     * worker's end of their private channel, and how many probes were loaded when it forked. */
    pid_t child_pid;
    int child_channel;
    int child_loaded;
    const char *case_id; /* the case being run (its id), for a "flawed" message; else NULL */
    struct ic_text_buf result_text; /* an "end" message's result, reused from case to case */
};

/* --- Children killed by a signal ------------------------------------------------------------ */

/* Where the SIGCHLD handler reports a child that died by a signal: a library's forked child
 * that crashes is the case's crash even when the worker itself then only fails or hangs, and
 * the worker's own status cannot say so. Written from a signal handler: a plain int. */
static int ic_child_events_fd = -1;

static void ic_on_child(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)context;
    if (ic_child_events_fd < 0 || !info ||
        (info->si_code != CLD_KILLED && info->si_code != CLD_DUMPED))
        return;
    int saved = errno;
    int32_t record[2] = {(int32_t)info->si_pid, (int32_t)info->si_status};
    ssize_t written = write(ic_child_events_fd, record, sizeof(record));
    (void)written; /* nothing to do from a handler when the supervisor is gone */
    errno = saved;
}

/* Makes the worker's descriptors its own and ties its life to the supervisor's. */
static void ic_worker_isolate(const struct ic_worker_config *config)
{
    /* Only stdin, stdout, stderr and the two channels stay open: a library that writes to
     * every descriptor it finds reaches nothing of the supervisor's (an output file the
     * supervisor had open when it started us, say). */
    int keep[2] = {config->fd, config->events_fd >= 0 ? config->events_fd : config->fd};
    if (keep[0] > keep[1]) {
        int t = keep[0];
        keep[0] = keep[1];
        keep[1] = t;
    }
    close_range(3, (unsigned)keep[0] - 1, 0);
    if (keep[1] > keep[0] + 1)
        close_range((unsigned)keep[0] + 1, (unsigned)keep[1] - 1, 0);
    close_range((unsigned)keep[1] + 1, ~0u, 0);
    /* Close-on-exec before any library runs: nothing a library starts inherits them. */
    fcntl(config->fd, F_SETFD, FD_CLOEXEC);
    if (config->events_fd >= 0) {
        fcntl(config->events_fd, F_SETFD, FD_CLOEXEC);
        ic_child_events_fd = config->events_fd;
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = ic_on_child;
        action.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
        sigemptyset(&action.sa_mask);
        sigaction(SIGCHLD, &action, NULL);
    }
    /* A supervisor killed outright takes its workers with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* No core files: a worker holding TensorFlow, torch and paddle maps gigabytes, and a run
     * where a consumer crashes on every dtype would write one such core a crash. The
     * reproducer of a crash finding gives a core of the crash alone, where one is wanted. */
    struct rlimit no_core;
    if (getrlimit(RLIMIT_CORE, &no_core) == 0) {
        no_core.rlim_cur = 0;
        setrlimit(RLIMIT_CORE, &no_core);
    }
}

static double ic_worker_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sends `msg` to the supervisor and deletes it. `built` false: building it ran out of memory
 * (msg may be NULL or half made), nothing is sent, IC_ENOMEM. */
static int ic_worker_send(struct ic_worker *w, cJSON *msg, bool built)
{
    int rc = built ? ic_ipc_send(w->fd, msg) : IC_ENOMEM;
    cJSON_Delete(msg);
    return rc;
}

/* The flaw listener (ic_exchange.h): tells the supervisor that the export a library consumer
 * is about to get breaks a harmful rule of the producer's, before the consumer touches it, so
 * that a consumer dying of it is not charged alone. A message that cannot be sent is dropped:
 * the case's end goes the same way and says so. */
static void ic_worker_tell_flaw(void *context, enum ic_rule rule, const char *text)
{
    struct ic_worker *w = context;
    char repaired[IC_DIAG_MSG_MAX];
    if (!w->case_id)
        return;
    ic_text_copy(repaired, sizeof(repaired), text, strlen(text));
    cJSON *msg = ic_message_new(IC_MSG_FLAWED, w->seq);
    (void)ic_worker_send(w, msg,
                         msg && cJSON_AddStringToObject(msg, "case", w->case_id) &&
                             cJSON_AddStringToObject(msg, "rule", ic_rule_id(rule)) &&
                             cJSON_AddStringToObject(msg, "text", repaired));
}

static struct ic_probe *ic_worker_find(struct ic_worker *w, const char *name)
{
    for (int i = 0; i < w->count; i++) {
        if (strcmp(w->probes[i].name, name) == 0)
            return &w->probes[i];
    }
    return NULL;
}

static cJSON *ic_exc_to_json(const struct ic_py_exc *exc)
{
    cJSON *json = cJSON_CreateObject();
    if (json && (!cJSON_AddStringToObject(json, "type", exc->type) ||
                 !cJSON_AddStringToObject(json, "message", exc->message) ||
                 !cJSON_AddStringToObject(json, "where", exc->where))) {
        cJSON_Delete(json);
        return NULL;
    }
    return json;
}

/* Marks the output: what follows is the case's or the import's that starts now (ic_ipc.h).
 * A library that closed or moved the descriptor loses the mark, not the case. */
static void ic_worker_mark_output(void)
{
    static const char mark[] = IC_OUTPUT_CASE_MARK;
    ssize_t rc;
    do
        rc = write(STDERR_FILENO, mark, sizeof(mark) - 1);
    while (rc < 0 && errno == EINTR);
}

/* Loads a probe and reports it; a probe that fails to load is reported, not fatal. `ask`
 * (NULL: none) names modules the answer's "present" lists those of that are imported by then.
 * Returns 0 when the probe is loaded, IC_EPROBE when it failed, IC_EIO when the supervisor is
 * gone. */
static int ic_worker_load(struct ic_worker *w, const char *name, const char *path,
                          const cJSON *ask)
{
    struct ic_py_exc exc;
    char *info = NULL;
    int rc;
    double start = ic_worker_now_ms();

    if (ic_worker_find(w, name))
        return 0;
    ic_worker_mark_output();
    /* Probes are found by pointer only while a case runs: growing between loads is safe. */
    struct ic_probe *more = ic_grow(w->probes, &w->capacity, (size_t)w->count, sizeof(*more), 16);
    if (!more)
        return IC_ENOMEM;
    w->probes = more;
    cJSON *present = ask ? cJSON_CreateArray() : NULL;
    ic_py_enter();
    rc = ic_probe_load(&w->probes[w->count], name, path, &info, &exc);
    if (rc == 0)
        ic_py_freeze_imports();
    const cJSON *asked;
    cJSON_ArrayForEach(asked, ask)
    {
        if (present && cJSON_IsString(asked) && ic_py_module_imported(asked->valuestring))
            cJSON_AddItemToArray(present, cJSON_CreateString(asked->valuestring));
    }
    ic_py_faulthandler_rearm();
    ic_py_leave();

    cJSON *msg = ic_message_new(IC_MSG_LOADED, w->seq);
    bool built = msg && cJSON_AddStringToObject(msg, "probe", name) &&
                 cJSON_AddBoolToObject(msg, "ok", rc == 0) &&
                 cJSON_AddNumberToObject(msg, "ms", ic_worker_now_ms() - start);
    /* What the supervisor asked about that this import brought in (loading its probe next
     * imports nothing new); an answer without it is one that knows nothing. */
    if (built && present && cJSON_AddItemToObject(msg, "present", present))
        present = NULL;
    if (built && rc == 0) {
        w->count++;
        cJSON *parsed = cJSON_Parse(info);
        built = cJSON_IsObject(parsed) && cJSON_AddItemToObject(msg, "info", parsed);
        if (!built)
            cJSON_Delete(parsed);
    } else if (built) {
        cJSON *error = ic_exc_to_json(&exc);
        built = error &&
                cJSON_AddBoolToObject(error, "not_installed", w->probes[w->count].not_installed) &&
                cJSON_AddItemToObject(msg, "error", error);
        if (!built)
            cJSON_Delete(error);
        memset(&w->probes[w->count], 0, sizeof(w->probes[w->count]));
    }
    free(info);
    cJSON_Delete(present);
    int sent = ic_worker_send(w, msg, built);
    if (sent < 0)
        return sent;
    return rc == 0 ? 0 : IC_EPROBE;
}

/* "end": the case's result, and its whole microseconds by stage (IC_STAGE_LIST order), which
 * the supervisor sums for run.timing. The result is a raw item, the text ic_result_json_text
 * writes (its duration, whole microseconds in ms, as ic_number_text writes it, without
 * printf), and ic_ipc_send prints the stages so: the message is printed and let go. */
static int ic_worker_send_end(struct ic_worker *w, const char *id, const struct ic_result *res)
{
    cJSON *msg = ic_message_new(IC_MSG_END, w->seq);
    /* The text printing ic_result_to_json's object would make, which the supervisor parses
     * as before: no tree of some fifty nodes made, printed and freed a case. */
    ic_text_buf_truncate(&w->result_text, 0);
    w->result_text.status = 0;
    cJSON *result = ic_result_json_text(res, &w->result_text) == 0
                        ? cJSON_CreateRaw(ic_text_buf_str(&w->result_text))
                        : NULL;
    int us[IC_STAGE_COUNT];
    for (int i = 0; i < IC_STAGE_COUNT; i++)
        us[i] = res->stage_ms[i] > 0 && res->stage_ms[i] < 2e6
                    ? (int)(res->stage_ms[i] * 1000 + 0.5)
                    : 0;
    cJSON *stages = cJSON_CreateIntArray(us, IC_STAGE_COUNT);
    bool built = msg && result && stages && cJSON_AddStringToObject(msg, "case", id) &&
                 cJSON_AddItemToObject(msg, "result", result) &&
                 cJSON_AddItemToObject(msg, "stages", stages);
    /* what is not attached is not the message's to free */
    if (!built && result && !(msg && cJSON_GetObjectItemCaseSensitive(msg, "result") == result))
        cJSON_Delete(result);
    if (!built && stages && !(msg && cJSON_GetObjectItemCaseSensitive(msg, "stages") == stages))
        cJSON_Delete(stages);
    return ic_worker_send(w, msg, built);
}

static int ic_worker_load_list(struct ic_worker *w, const cJSON *load);

static int ic_worker_run_case(struct ic_worker *w, const struct ic_case *cp, const char *id,
                              const char *seed_text, bool announce);

/* The exit status of a case child that ended as asked (its channel to the worker closed): any
 * other end (a library's own exit, even with status 0) is a case that ended without its
 * result. */
#define IC_CASE_CHILD_DONE 113

/* What the worker hands its case child for each case: the request's id, seed and sequence
 * number. One datagram, so the child reads a whole request or none. */
struct ic_child_request {
    char id[IC_CASE_ID_MAX];
    char seed[32];
    unsigned long long seq;
};

/* The case child's loop: runs each case the worker hands it, answering the supervisor itself
 * on the worker's channel, and acknowledges each to the worker with the request's sequence
 * number. Leaves with _exit when the worker closes its end. */
static void ic_worker_child_serve(struct ic_worker *w, int channel)
{
    struct ic_child_request req;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* not inherited: the child dies with its worker too */
    for (;;) {
        ssize_t got = recv(channel, &req, sizeof(req), 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof(req))
            break; /* the worker closed its end: done */
        struct ic_case c;
        if (ic_case_parse_id(req.id, &c) < 0)
            _exit(70);
        w->seq = req.seq;
        int rc = ic_worker_run_case(w, &c, req.id, req.seed, true);
        fflush(NULL);
        if (rc < 0 || send(channel, &req.seq, sizeof(req.seq), MSG_NOSIGNAL) != sizeof(req.seq))
            _exit(70);
    }
    _exit(IC_CASE_CHILD_DONE);
}

/* Ends the case child, if there is one, and waits for it: it leaves when its channel closes. */
static void ic_worker_retire_child(struct ic_worker *w)
{
    if (w->child_pid <= 0)
        return;
    close(w->child_channel);
    while (waitpid(w->child_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    w->child_pid = 0;
    w->child_channel = -1;
}

/* Forks the case child, which keeps every library the worker has loaded. Returns 0, or
 * negative when no child could be made. */
static int ic_worker_spawn_child(struct ic_worker *w)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return IC_EIO;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = ic_py_fork();
    if (pid < 0) {
        close(pair[0]);
        close(pair[1]);
        return IC_EIO;
    }
    if (pid == 0) {
        close(pair[0]);
        /* Above the worker's channel: a library that looks for "the" socket among its
         * descriptors meets that one first, as in a worker without a child. */
        int high = fcntl(pair[1], F_DUPFD_CLOEXEC, w->fd + 1);
        if (high >= 0) {
            close(pair[1]);
            pair[1] = high;
        }
        ic_worker_child_serve(w, pair[1]); /* does not return */
    }
    close(pair[1]);
    w->child_pid = pid;
    w->child_channel = pair[0];
    w->child_loaded = w->count;
    return 0;
}

/* Waits for the case child's acknowledgement on its channel: what recv() got, or -1 when the
 * child ended without one. A process the case started inherits the child's end of the
 * channel, and one that outlives the child keeps it from reading as closed: the child's end is
 * looked for between reads, and then it is reaped here (*ret_reaped, *ret_status). */
static ssize_t ic_worker_await_child(struct ic_worker *w, void *buf, size_t size, int *ret_status,
                                     bool *ret_reaped)
{
    for (;;) {
        struct pollfd channel = {.fd = w->child_channel, .events = POLLIN};
        int n = poll(&channel, 1, 100);
        if (n > 0) {
            ssize_t got;
            do
                got = recv(w->child_channel, buf, size, 0);
            while (got < 0 && errno == EINTR);
            return got;
        }
        if (n < 0 && errno != EINTR)
            return -1;
        pid_t ended = waitpid(w->child_pid, ret_status, WNOHANG);
        if (ended == w->child_pid || (ended < 0 && errno != EINTR)) {
            *ret_reaped = ended == w->child_pid;
            return -1;
        }
    }
}

/* An isolated case (the request says "fork"): it runs in a child of the worker, so that a
 * crash costs the child alone and the worker keeps its imports for the next case. The child
 * stays and serves the next isolated cases too (a fork of a process holding large libraries
 * is tens of milliseconds); a load made since it was forked retires it, as it lacks what was
 * loaded. When the child dies before acknowledging the case, the worker says how ("lost":
 * "signal N" or "exit status N"), and the next case gets a new child. Without a child (fork
 * failed) the case runs in the worker. */
static int ic_worker_run_forked(struct ic_worker *w, const struct ic_case *c, const char *id,
                                const char *seed_text)
{
    struct ic_child_request req;
    memset(&req, 0, sizeof(req));
    snprintf(req.id, sizeof(req.id), "%s", id);
    snprintf(req.seed, sizeof(req.seed), "%s", seed_text);
    req.seq = w->seq;
    if (w->child_pid > 0 && w->child_loaded != w->count)
        ic_worker_retire_child(w);
    if (w->child_pid <= 0 && ic_worker_spawn_child(w) < 0)
        return ic_worker_run_case(w, c, id, seed_text, true);
    bool sent = send(w->child_channel, &req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req);
    if (!sent) {
        /* The child ended between cases, before this one reached it: a new one runs it. */
        ic_worker_retire_child(w);
        if (ic_worker_spawn_child(w) < 0)
            return ic_worker_run_case(w, c, id, seed_text, true);
        sent = send(w->child_channel, &req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req);
    }
    unsigned long long ack[2]; /* room for more than an acknowledgement, to see one */
    int status = 0;
    bool reaped = false;
    ssize_t got = sent ? ic_worker_await_child(w, ack, sizeof(ack), &status, &reaped) : -1;
    if (got == (ssize_t)sizeof(ack[0]) && ack[0] == req.seq)
        return 0;
    /* Anything else on the channel was written by the case's code, not by our child: the
     * child cannot be trusted to go on, and the case is a protocol violation. */
    bool forged = got > 0;
    pid_t pid = w->child_pid;
    if (forged)
        kill(pid, SIGKILL);
    close(w->child_channel);
    while (!reaped && waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return IC_EIO;
    }
    w->child_pid = 0;
    w->child_channel = -1;
    char how[32];
    if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "signal %d", WTERMSIG(status));
    else
        snprintf(how, sizeof(how), "exit status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    cJSON *lost = ic_message_new(IC_MSG_LOST, w->seq);
    return ic_worker_send(
        w, lost,
        lost && cJSON_AddStringToObject(lost, "case", id) &&
            cJSON_AddStringToObject(lost, "how", how) &&
            cJSON_AddNumberToObject(lost, "pid", (double)pid) &&
            (!forged || cJSON_AddStringToObject(lost, "violation",
                                                "the case wrote to the private channel between "
                                                "the worker and the child that runs its cases")));
}

static int ic_worker_run(struct ic_worker *w, const cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "case");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(msg, "seed");
    const cJSON *load = cJSON_GetObjectItemCaseSensitive(msg, "load");
    struct ic_case c;

    if (ic_case_parse_id(id->valuestring, &c) < 0)
        return IC_EPROTO;
    int loaded = ic_worker_load_list(w, load);
    if (loaded < 0)
        return loaded;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "fork")))
        return ic_worker_run_forked(w, &c, id->valuestring, seed->valuestring);
    /* A pipelined case imports nothing: the supervisor takes the "end" of the case before it
     * for its start (ic_proc_promote), so a "begin" would tell it nothing. */
    bool pipelined = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "pipelined")) &&
                     cJSON_GetArraySize(load) == 0;
    return ic_worker_run_case(w, &c, id->valuestring, seed->valuestring, !pipelined);
}

/* Runs one case in this process: "begin" (when `announce`), the exchange, "end". */
static int ic_worker_run_case(struct ic_worker *w, const struct ic_case *cp, const char *id,
                              const char *seed_text, bool announce)
{
    struct ic_case c = *cp;
    struct ic_result res;
    int rc = 0;
    ic_worker_mark_output();
    if (announce) {
        cJSON *begin = ic_message_new(IC_MSG_BEGIN, w->seq);
        /* The pid: a forked case's is not the worker's, and a hung case's Python stack is
         * asked of the process that runs it. */
        rc = ic_worker_send(w, begin,
                            begin && cJSON_AddStringToObject(begin, "case", id) &&
                                cJSON_AddNumberToObject(begin, "pid", (double)getpid()));
        if (rc < 0)
            return rc;
    }

    struct ic_probe *producer = ic_worker_find(w, c.producer);
    struct ic_probe *consumer = ic_worker_find(w, c.consumer);
    bool reference = strcmp(c.consumer, IC_REFERENCE_CONSUMER) == 0;
    if (!producer || (!consumer && !reference)) {
        memset(&res, 0, sizeof(res));
        ic_result_set(&res, IC_OUTCOME_ERROR, "the worker could not load the %s probe",
                      producer ? c.consumer : c.producer);
    } else {
        /* 64-bit seeds travel as strings: JSON numbers are doubles. */
        uint64_t run_seed = strtoull(seed_text, NULL, 10);
        ic_py_enter();
        ic_py_faulthandler_rearm(); /* a library may have taken the fatal signals since */
        w->case_id = id;
        rc = ic_exchange_run(&w->exchange, &c, producer, reference ? NULL : consumer, run_seed,
                             &res);
        w->case_id = NULL;
        ic_py_leave();
        if (rc < 0)
            return rc;
    }
    return ic_worker_send_end(w, id, &res);
}

/* Loads the probes a request lists ("load": [{"probe", "path"}, ...]), answering each. */
static int ic_worker_load_list(struct ic_worker *w, const cJSON *load)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, load)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "probe");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(item, "path");
        if (!cJSON_IsString(name) || !cJSON_IsString(path))
            return IC_EPROTO;
        int rc = ic_worker_load(w, name->valuestring, path->valuestring, NULL);
        if (rc == IC_EIO || rc == IC_ENOMEM)
            return rc;
    }
    return 0;
}

/* The probe called `name` for a reproducer: the loaded one, else one opened without its
 * load() from the request's "probes" list (kept for the next reproducers). NULL with the
 * reason in `error` when it cannot be opened. */
static struct ic_probe *ic_worker_repro_probe(struct ic_worker *w, const char *name,
                                              const cJSON *probes, char *error, size_t size)
{
    struct ic_probe *probe = ic_worker_find(w, name);
    for (int i = 0; !probe && i < w->nopened; i++) {
        if (strcmp(w->opened[i].name, name) == 0)
            probe = &w->opened[i];
    }
    if (probe)
        return probe;
    const char *path = NULL;
    const cJSON *item;
    cJSON_ArrayForEach(item, probes)
    {
        if (strcmp(ic_json_string_or(item, "probe", ""), name) == 0)
            path = ic_json_string(item, "path");
    }
    struct ic_probe *more =
        ic_grow(w->opened, &w->opened_capacity, (size_t)w->nopened, sizeof(*more), 8);
    struct ic_py_exc exc;
    if (!path || !more) {
        snprintf(error, size, "the %s probe %s", name,
                 path ? "could not be opened: out of memory" : "was not named in the request");
        return NULL;
    }
    w->opened = more;
    ic_py_enter();
    int rc = ic_probe_open(&w->opened[w->nopened], name, path, &exc);
    ic_py_leave();
    if (rc < 0) {
        char why[1000];
        ic_py_exc_format(&exc, why, sizeof(why));
        snprintf(error, size, "the %s probe could not be opened: %s", name, why);
        return NULL;
    }
    return &w->opened[w->nopened++];
}

/* {"op":"repro","case":ID,"failure":{...},"probes":[...]}: writes the reproducer of the case's
 * failure and answers {"ev":"repro","case":ID,"script":S} or {...,"error":E}. The probes are
 * opened, not loaded: no library is imported for a reproducer, so writing the findings'
 * reproducers after a run costs milliseconds, not every library's import again. */
static int ic_worker_repro(struct ic_worker *w, const cJSON *msg, const char *kit_path)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "case");
    const cJSON *failure = cJSON_GetObjectItemCaseSensitive(msg, "failure");
    const cJSON *probes = cJSON_GetObjectItemCaseSensitive(msg, "probes");
    struct ic_case c;
    struct ic_py_exc exc;
    char *failure_json = NULL, *script = NULL, error[1400] = "";

    if (ic_case_parse_id(id->valuestring, &c) < 0)
        return IC_EPROTO;
    bool reference = strcmp(c.consumer, IC_REFERENCE_CONSUMER) == 0;
    struct ic_probe *producer = ic_worker_repro_probe(w, c.producer, probes, error, sizeof(error));
    struct ic_probe *consumer =
        producer && !reference ? ic_worker_repro_probe(w, c.consumer, probes, error, sizeof(error))
                               : NULL;
    failure_json = cJSON_PrintUnformatted(failure);
    if (!failure_json)
        return IC_ENOMEM;
    if (producer && (consumer || reference)) {
        ic_py_enter();
        script = ic_probe_reproducer(kit_path, failure_json, &c, producer,
                                     reference ? NULL : consumer, &exc);
        ic_py_leave();
        if (!script)
            ic_py_exc_format(&exc, error, sizeof(error));
    }
    free(failure_json);
    cJSON *answer = ic_message_new(IC_MSG_SCRIPT, w->seq);
    bool built = answer && cJSON_AddStringToObject(answer, "case", id->valuestring) &&
                 (script ? cJSON_AddStringToObject(answer, "script", script)
                         : cJSON_AddStringToObject(answer, "error", error));
    free(script);
    return ic_worker_send(w, answer, built);
}

/* The copy's side of a "copy" request: waits until the middle process has left, so that its
 * parent is the supervisor (a subreaper), then ties its life to it, leads its own process
 * group, and takes the three descriptors the request brought in place of the template's
 * channel, events pipe, stdout and stderr (at the same numbers). Nonzero: it cannot serve. */
static int ic_worker_become_copy(const struct ic_worker_config *config, pid_t supervisor,
                                 const int fds[3], const char *slot)
{
    for (int i = 0; i < 5000 && getppid() != supervisor; i++) {
        struct timespec pause = {0, 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != supervisor) /* gone, or not a subreaper: nobody would reap us */
        return -1;
    setpgid(0, 0);
    if (dup2(fds[0], config->fd) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0 ||
        (config->events_fd >= 0 && dup2(fds[2], config->events_fd) < 0))
        return -1;
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    fcntl(config->fd, F_SETFD, FD_CLOEXEC);
    if (config->events_fd >= 0)
        fcntl(config->events_fd, F_SETFD, FD_CLOEXEC);
    setenv("INTEROPCHECK_WORKER", slot, 1);
    ic_py_setenv("INTEROPCHECK_WORKER", slot); /* os.environ is a copy made at startup */
    return 0;
}

/* "copy": forks a copy of this worker (every probe it loaded, nothing else run) that serves
 * the supervisor as a new worker over the channel the request brought, with that output and
 * events pipe. The copy is handed to the supervisor (ic_py_fork_detached) before the answer
 * ("copied", its pid, or 0 and why) is sent, so the supervisor can wait for it as for a
 * worker it started. In the copy, returns 1 with `in` emptied: it goes on as a worker. */
static int ic_worker_copy(struct ic_worker *w, const struct ic_worker_config *config,
                          struct ic_framebuf *in, const cJSON *msg)
{
    int fds[IC_IPC_MAX_FDS];
    int nfds = ic_framebuf_take_fds(in, fds, IC_IPC_MAX_FDS);
    const char *error = NULL;
    pid_t copy = -1;
    char slot[16];
    snprintf(slot, sizeof(slot), "%.0f",
             cJSON_GetObjectItemCaseSensitive(msg, "slot")->valuedouble);
    if (nfds != 3) {
        error = "the request did not bring three descriptors";
    } else {
        pid_t supervisor = getppid();
        fflush(NULL); /* nothing buffered is written twice */
        copy = ic_py_fork_detached();
        if (copy == 0) {
            if (ic_worker_become_copy(config, supervisor, fds, slot) < 0)
                _exit(1);
            ic_framebuf_release(in);
            in->accept_fds = true;
            w->child_pid = 0;
            w->child_channel = -1;
            return 1;
        }
        if (copy < 0)
            error = strerror(errno);
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    cJSON *copied = ic_message_new(IC_MSG_COPIED, w->seq);
    return ic_worker_send(w, copied,
                          copied &&
                              cJSON_AddNumberToObject(copied, "pid", copy > 0 ? (double)copy : 0) &&
                              (!error || cJSON_AddStringToObject(copied, "error", error)));
}

int ic_worker_main(const struct ic_worker_config *config)
{
    struct ic_worker *w = calloc(1, sizeof(*w));
    struct ic_framebuf in = {0};
    char err[2048], why[256];
    int status = 1;

    if (!w)
        return 1;
    w->fd = config->fd;
    w->child_channel = -1;
    ic_worker_isolate(config);
    ic_exchange_set_flaw_listener(ic_worker_tell_flaw, w);
    struct ic_py_config pyconfig = {
        .python = config->python, .sys_path = NULL, .faulthandler = true};
    if (ic_py_init(&pyconfig, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck worker: %s\n", err);
        goto done;
    }
    struct ic_py_exc exc;
    ic_py_enter();
    int rc = ic_probe_kit_load(config->kit_path, &exc);
    ic_py_leave();
    if (rc < 0) {
        fprintf(stderr, "interopcheck worker: cannot load %s: %s: %s\n", config->kit_path, exc.type,
                exc.message);
        goto done;
    }

    in.accept_fds = true; /* a "copy" request brings its copy's descriptors */
    for (;;) {
        int error = 0;
        enum ic_message kind;
        cJSON *msg = ic_ipc_receive(w->fd, &in, &error, why, sizeof(why));
        if (!msg) {
            status = error == 0 ? 0 : 1; /* end of file: the supervisor is done with us */
            if (error == IC_EPROTO)
                fprintf(stderr, "interopcheck worker: protocol violation: %s\n", why);
            break;
        }
        rc = ic_ipc_check(msg, IC_IPC_WORKER, &kind, why, sizeof(why));
        if (rc == 0)
            w->seq = (unsigned long long)cJSON_GetObjectItemCaseSensitive(msg, "seq")->valuedouble;
        /* Only isolated cases go to the case child: anything else is the worker's again. */
        if (rc < 0 || kind != IC_MSG_RUN ||
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "fork")))
            ic_worker_retire_child(w);
        if (rc == 0 && kind == IC_MSG_QUIT) {
            cJSON_Delete(msg);
            status = 0;
            break;
        } else if (rc == 0 && kind == IC_MSG_LOAD) {
            rc = ic_worker_load(w, ic_json_string(msg, "probe"), ic_json_string(msg, "path"),
                                cJSON_GetObjectItemCaseSensitive(msg, "ask"));
            if (rc == IC_EPROBE)
                rc = 0;
        } else if (rc == 0 && kind == IC_MSG_RUN) {
            rc = ic_worker_run(w, msg);
        } else if (rc == 0 && kind == IC_MSG_REPRO) {
            rc = ic_worker_repro(w, msg, config->kit_path);
        } else if (rc == 0 && kind == IC_MSG_COPY) {
            rc = ic_worker_copy(w, config, &in, msg);
            if (rc > 0)
                rc = 0; /* the copy: a worker from here on */
        } else if (rc < 0) {
            fprintf(stderr, "interopcheck worker: protocol violation: %s\n", why);
        }
        cJSON_Delete(msg);
        if (rc < 0) {
            fprintf(stderr, "interopcheck worker: %s\n", ic_strerror(rc));
            break;
        }
    }

done:
    ic_worker_retire_child(w);
    ic_framebuf_release(&in);
    fflush(stdout);
    fflush(stderr);
    /* No ic_py_finalize: interpreter shutdown runs the libraries' teardown, which is not
     * under test and would only add noise after the last result was sent. */
    free(w->probes);
    free(w->opened);
    ic_text_buf_release(&w->result_text);
    free(w);
    return status;
}

/* Loads one probe in the foreground runner; err says why it could not be. */
static int ic_foreground_load(struct ic_probe *probe, const struct ic_worker_probe *which,
                              char *err, size_t err_size)
{
    struct ic_py_exc exc;
    char *info = NULL;
    int rc = ic_probe_load(probe, which->name, which->path, &info, &exc);
    free(info);
    if (rc < 0)
        snprintf(err, err_size, "the %s probe (%s) could not be loaded: %s: %s", which->name,
                 which->path, exc.type, exc.message);
    return rc;
}

int ic_worker_foreground(const struct ic_worker_config *config,
                         const struct ic_worker_probe *producer,
                         const struct ic_worker_probe *consumer, const struct ic_case *c,
                         uint64_t seed, struct ic_result *ret, char *err, size_t err_size)
{
    struct ic_probe probes[2];
    struct ic_exchange_cache cache;
    struct ic_py_exc exc;
    memset(probes, 0, sizeof(probes));
    memset(&cache, 0, sizeof(cache));
    struct ic_py_config pyconfig = {
        .python = config->python, .sys_path = NULL, .faulthandler = true};
    int rc = ic_py_init(&pyconfig, err, err_size);
    if (rc < 0)
        return rc;
    ic_py_enter();
    rc = ic_probe_kit_load(config->kit_path, &exc);
    if (rc < 0)
        snprintf(err, err_size, "cannot load %s: %s: %s", config->kit_path, exc.type, exc.message);
    if (rc == 0)
        rc = ic_foreground_load(&probes[0], producer, err, err_size);
    if (rc == 0 && consumer)
        rc = ic_foreground_load(&probes[1], consumer, err, err_size);
    if (rc == 0) {
        ic_py_faulthandler_rearm();
        rc = ic_exchange_run(&cache, c, &probes[0], consumer ? &probes[1] : NULL, seed, ret);
        if (rc < 0)
            snprintf(err, err_size, "the exchange could not be run: %s", ic_strerror(rc));
    }
    ic_py_leave();
    /* The probes and the interpreter stay: the process ends next, and the libraries' own
     * teardown is not under test (as in a worker). */
    return rc;
}
