/*
 * ic_supervisor: the run stage. It starts worker processes (this binary in worker mode),
 * hands them libraries to load and cases to run, and turns a worker that dies or hangs into
 * the outcome of the one case it was running.
 *
 * Contract
 * - Workers import each library once and run many cases. A worker that crashes (any
 *   signal) or passes the case timeout costs that case alone: it is recorded as `crash` with
 *   the signal's name or `timeout`, the worker is replaced, and the next case goes on. Each
 *   worker leads its own process group; a crash, a timeout or a violation kills the group,
 *   and a child the case started that died by a signal makes the case a crash with the
 *   child's signal when the worker then fails. It is charged to the side at work (ic_crash.h),
 *   except where the consumer died of an export that breaks a harmful rule of the producer's
 *   (the worker's "flawed" message came first): then to the producer, under that rule.
 * - Every message is checked (ic_ipc): a frame that is not one, a message outside the table,
 *   an answer for another request or case, a channel left mid-frame: the worker's group is
 *   killed and the case is `error` "worker protocol violation: ...". The run goes on.
 * - Discovery loads each wanted library in a worker and records its info or its import
 *   error in the catalog. A library whose import crashes the worker is retried alone; if
 *   alone it imports, it is ordered before the libraries loaded earlier (some pairs of
 *   libraries only coexist in one order), and every later worker follows that order. The
 *   order is the catalog's, but that a library whose module an earlier import brought in
 *   (the worker says so) goes next: loading it imports nothing new.
 * - A pair of libraries whose case crashed or hung over a protocol is isolated for the rest of
 *   the run: its later cases over that protocol are set aside, to run in a child forked by a
 *   worker that never ran a case itself ("fork" in the request). A pair isolated before the
 *   run (ic_pool_isolate_pair) has all its cases set aside from the start. A worker that never
 *   ran a case, the one started after a crash included, runs the set-aside cases first (unless
 *   another such worker serves them, where there is no template); the others wait until the
 *   plan is through, then take them too (with a template; without one they wait for the
 *   worker serving them, rather than import the pair again). The child
 *   runs one isolated case after another until one kills it; the next case gets a new child.
 *   A crash then costs the child: the worker keeps its imports (a crash no longer means
 *   importing the pair again), and no state of a case run outside the child is inherited.
 *   Where the template is large and the pair imports quickly, that worker is a lean one,
 *   started afresh with the pair's libraries alone, so that each crash costs a small child;
 *   one that cannot reach its case within its import budget is given up, charging no case.
 *   Not on a GPU: the CUDA driver refuses every call in a child of a process that initialised
 *   it; nor for a library whose probe says a fork cannot use it ("fork": false: JAX, whose
 *   load() starts threads a fork lacks). Such an isolated case runs in a worker itself, and a
 *   crash costs that worker.
 * - After a crash or hang in an isolated pair, that pair's set-aside cases of the dead case's
 *   dtype or layout run after its other ones (the same deaths most often follow).
 * - Cases run in library-set order (by consumer, then producer; each worker takes every pair
 *   of one consumer at a time), and a worker running a case is sent up to sixteen more, so
 *   that it keeps its imports, a consumer's compiled kernels are made in one worker, and no
 *   worker waits for a round trip. While every busy worker holds eight or more, the pool
 *   reads their messages in batches (a pause of at most 1 ms between polls). A worker that
 *   dies hands back the cases it held: those of a pair isolated by its death are set aside
 *   with that pair's cases, the others run elsewhere.
 * - A worker slot without a process (discovery's worker fills slot 0) starts one only when it
 *   pays: when its share of the cases not yet handed out, at the mean time per case measured
 *   in the run, lasts more than twice the imports the unclaimed pairs need (and the process
 *   start), and only
 *   once the running workers have spent that much time on cases. Otherwise it leaves its
 *   cases to the running workers; a slot with cases of its own, or with no running worker able
 *   to take its next case, starts one. On a small selection the other slots thus start none.
 * - With two slots or more, and workers that may be copies, a pool of one slot can be spun
 *   off discovery's between two of its imports (ic_pool_spin_off, below): its worker is a copy
 *   of discovery's as it stands, and it runs cases in another thread while discovery goes on.
 *   It shares nothing discovery writes; ic_pool_absorb takes its statistics and the pairs that
 *   crashed in it back.
 * - Results are delivered through the callback as they arrive, in completion order; the
 *   callback owns nothing it is given beyond the call.
 * - The pool owns its processes: ic_pool_destroy stops and reaps them all. The supervisor
 *   never loads Python itself.
 */
#ifndef IC_SUPERVISOR_H
#define IC_SUPERVISOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_case.h"
#include "ic_catalog.h"
#include "ic_json.h"
#include "ic_result.h"

struct ic_supervisor_config {
    const char *self_exe; /* this binary, started again in worker mode */
    const char *python;   /* the interpreter workers embed */
    int jobs;             /* workers running cases at once */
    double case_timeout_s;
    double load_timeout_s; /* importing one library */
    uint64_t seed;
    bool no_copies; /* no template: every worker is started afresh (ic_pool_make_template) */
    /* Set (by a signal handler) to stop: ic_pool_run abandons the cases in flight and
     * returns IC_EINTR. NULL: never. */
    const volatile sig_atomic_t *stop;
};

/* What running the cases cost (ic_pool_stats), for the report's run.timing and bench/.
 * Seconds are summed over the workers: with N of them they can add up to N times the wall. */
struct ic_pool_stats {
    unsigned workers_started; /* processes started to run cases (discovery's not counted, a
                                 prewarming one is) */
    unsigned restarts;        /* of those, the ones replacing a worker that crashed, hung, was
                                 stopped for an import-order conflict or for an isolated pair */
    unsigned isolated_cases;  /* cases of isolated pairs, run in a worker's case child */
    unsigned starts_declined; /* worker slots that left their cases to the running workers,
                                 and started none, as the imports would not pay */
    unsigned ledger_pairs;    /* pairs isolated from the start (ic_pool_isolate_pair) */
    unsigned copies;          /* of workers_started, the copies of the template (ic_proc_copy):
                                 started with every import, in milliseconds */
    unsigned lean_workers;    /* of workers_started, the lean ones: started afresh for isolated
                                 cases of a pair cheap to import, importing only that pair, so
                                 that each crash costs a small child (not counted as restarts) */
    double import_s;   /* the first import of each library in each worker slot */
    double reimport_s; /* imports of a library its slot had imported before, in an earlier
                          process (the price of restarts) */
    double prewarm_s;  /* imports of the prewarming worker (ic_pool_discover): sent during
                          discovery, on a core it leaves idle; the last may end in the run */
    double case_s;     /* from a case's "begin" to its "end" */
    double stage_s[IC_STAGE_COUNT]; /* the cases' own time in the worker, by stage (the "end"
                                       messages' "stages"): where case_s goes */
    double wait_s;     /* from a request sent to its "begin", less its imports: the round trip
                          and the worker's own overhead between cases */
    /* stage_s of the cases that ran on warm caches: in a process that had built the
     * producer's array of that dtype and layout, and had the consumer import that protocol,
     * dtype and layout, before (not a case forked for an isolated pair). What a library
     * compiles or caches for a new shape is paid once per process; these are the cases that
     * did not pay it, and warm_cases counts them. */
    double stage_warm_s[IC_STAGE_COUNT];
    unsigned warm_cases;
    unsigned early_cases;   /* cases that ended in pools spun off discovery's
                               (ic_pool_spin_off), while discovery went on importing */
    unsigned early_workers; /* those pools' workers: copies of discovery's worker, made
                               between two of its imports (not in workers_started) */
};


struct ic_pool;

/* The statistics of the pool's ic_pool_run calls so far. */
void ic_pool_stats(const struct ic_pool *pool, struct ic_pool_stats *ret);

int ic_pool_create(const struct ic_supervisor_config *config, struct ic_catalog *catalog,
                   struct ic_pool **ret);
void ic_pool_destroy(struct ic_pool *pool);

/* Asks every worker to quit, without waiting: for a caller done with the pool that has more
 * to do before ic_pool_destroy, which then reaps them. The pool runs nothing after this. */
void ic_pool_dismiss(struct ic_pool *pool);

/* Makes `stop` the pool's stop flag (see struct ic_supervisor_config). */
void ic_pool_set_stop(struct ic_pool *pool, const volatile sig_atomic_t *stop);

/* Isolates the pair (producer, consumer) over `protocol` from the start of the next
 * ic_pool_run, as a crash or hang of one of its cases in that run would: the crash ledger of
 * earlier runs (ic_ledger.h). Its cases are set aside from the start, and a worker that has
 * run no case yet (discovery's, which holds every import) runs them first, each in a child
 * it forks, so that a crash costs a child instead of a worker and its imports. A name the
 * catalog lacks is the reference consumer's. IC_ENOMEM leaves the pair as it was. */
int ic_pool_isolate_pair(struct ic_pool *pool, const char *producer, const char *consumer,
                         enum ic_protocol protocol);

/* Progress of discovery: called with IC_DISCOVER_NEXT before each library's import is asked
 * for, and with IC_DISCOVER_IMPORTING once discovery's worker has been asked and imports it
 * (not for the imports made again on its crash path). */
enum ic_discover_step { IC_DISCOVER_NEXT, IC_DISCOVER_IMPORTING };
typedef void (*ic_discover_progress_fn)(void *context, const struct ic_library *lib,
                                        enum ic_discover_step step);

/* Loads the libraries whose catalog index is in `wanted` and fills the catalog: state,
 * version, info or error, and the import order. With `prewarm` (a run follows), two worker
 * slots or more, and workers that cannot be copies of the template (copies off, or from the
 * first library that rules the template out), the second slot's worker is started and sent
 * every import discovery is about to make, in its order, which it makes beside discovery on a
 * core discovery leaves idle; the run that follows takes its last answers as they come
 * (ic_pool_run). What it holds is checked against the order discovery settles; a library
 * discovery moves or that kills an import starts a new one (src/run/README.md). A prewarming
 * worker that fails is given up, no case is charged with it, and its slot starts as it would
 * have; discovery's own results never depend on it. */
int ic_pool_discover(struct ic_pool *pool, const struct ic_libset *wanted, bool prewarm,
                     ic_discover_progress_fn progress, void *context);

/* Called once per case with its index in `cases`. */
typedef void (*ic_result_fn)(void *context, size_t index, const struct ic_result *res);

/* Runs `cases` on the pool's workers. Returns 0 when every case has a result (whatever its
 * outcome), IC_EINTR when config.stop was set (the cases in flight and those not started
 * have none), IC_EAGAIN when a pool spun off discovery's lost its worker or was asked to end
 * (ic_pool_end; the cases not run have none), negative when the supervisor itself failed (no
 * process could be started). */
int ic_pool_run(struct ic_pool *pool, const struct ic_case *cases, size_t count,
                ic_result_fn on_result, void *context);

/* Cases run while discovery imports. Discovery imports one library after another in one
 * worker, and leaves the other cores idle for seconds (a second process importing the same
 * libraries beside it only slows it down). Between two imports, the pairs of the libraries
 * imported so far can already run: a pool spun off the discovering one runs them, in
 * another thread, in a copy of discovery's worker as it stands.
 *
 * ic_pool_may_spin_off: the pool has two worker slots or more, its workers may be copies of
 * discovery's (no "fork": false library, no CUDA device, copies not turned off), discovery's
 * worker lives and ran nothing, and no prewarming worker runs.
 * ic_pool_spin_off: the new pool, of one slot, whose worker is that copy; call it between two
 * imports only (from a discovery progress callback), and with no other pool spun off still
 * out (ic_pool_absorb takes it back). The new pool reads only its own copy of
 * the catalog, starts no process and reaps none but its own, so that ic_pool_run may run it in
 * another thread while the discovering pool goes on; when its worker is gone (a crash, a hang)
 * ic_pool_run returns IC_EAGAIN with the cases left unrun. IC_EUNSUPPORTED when it may not
 * (above); IC_ECHILD when the copy failed, after which no spin-off is tried again (and
 * discovery's worker, if the failure cost it, imports the libraries so far again).
 * ic_pool_end, from any thread: the pool sends no more cases and its ic_pool_run returns
 * IC_EAGAIN once those sent have ended; with `abandon`, at once, killing what is in flight
 * (those cases get no result).
 * ic_pool_absorb, once its ic_pool_run has returned: stops its worker, adds its statistics to
 * `pool`'s, isolates there the pairs that crashed or hung in it, and destroys it. */
bool ic_pool_may_spin_off(const struct ic_pool *pool);
int ic_pool_spin_off(struct ic_pool *pool, struct ic_pool **ret);
void ic_pool_end(struct ic_pool *pool, bool abandon);
void ic_pool_absorb(struct ic_pool *pool, struct ic_pool *spun_off);

/* True when the pair is isolated over `protocol` (a case of it crashed or hung, or the crash
 * ledger named it): its cases are for a forking worker, not for one spun off. */
bool ic_pool_pair_isolated(const struct ic_pool *pool, const char *producer, const char *consumer,
                           enum ic_protocol protocol);

/* Called once per reproducer request with the script, or NULL and why there is none. */
typedef void (*ic_script_fn)(void *context, size_t index, const char *script, const char *error);

/* Has a worker write the reproducer of each request: requests[i] is {"case": ID, "failure":
 * {...}} (the finding's example case and its failure). Generating only writes text, so one
 * worker serves them in turn, importing the libraries each needs; a worker that dies costs
 * that request alone. Returns 0 when every request was answered, negative when no worker
 * could be started. */
int ic_pool_reproduce(struct ic_pool *pool, cJSON *const *requests, size_t count,
                      ic_script_fn on_script, void *context);

/* "SIGSEGV" for 11; "signal N" for a number without a name. */
const char *ic_signal_name(int sig, char *buf, size_t size);

#endif
