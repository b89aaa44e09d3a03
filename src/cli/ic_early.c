#include "ic_early.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ic_background.h"
#include "ic_error.h"
#include "ic_run_ledger.h"
#include "ic_stream.h"
#include "ic_supervisor.h"
#include "ic_text.h"

/* A background run is replaced by one with the new pairs once what it has left would last
 * less than this (at its own pace so far): each replacement stops discovery's worker for a
 * copy of itself (milliseconds to tens of them, as it grows). */
#define IC_EARLY_REFILL_S 0.5

/* ... or once it has run this long: its own measure of what it has left overestimates a
 * consumer's first cases (JAX compiles for each new shape), and a run that ends during a long
 * import leaves the core idle until the next boundary. */
#define IC_EARLY_REFILL_GAP_S 0.25

/* What the cases sent to a background run have to end when it stops (a worker holds up to
 * seventeen, each most often under a millisecond); what is in flight after that is killed
 * and runs again in the run. */
#define IC_EARLY_GRACE_S 0.25

/* Where a finished case's line is in the spool, and its outcome and attribution. */
struct ic_early_line {
    bool finished;
    int64_t offset;
    size_t length;
    struct ic_result_packed fields; /* no blob: the line holds the rest */
};

struct ic_early_done {
    struct ic_case c;
    struct ic_early_line line;
};

struct ic_early {
    struct ic_session *session;
    const struct ic_filter *filter;
    const struct ic_ledger *ledger;
    struct ic_libset planned; /* the libraries whose pairs are listed */
    /* The listed cases without a result; a background run runs the first `batch_count`, and
     * its thread writes their lines into the spool and `lines` (one per case it runs). */
    struct ic_case *todo;
    size_t ntodo, todo_capacity, batch_count;
    struct ic_early_line *lines;
    struct ic_stream spool;
    bool spool_open;
    struct ic_early_done *done; /* the finished ones, moved from `todo` after each run */
    size_t ndone, done_capacity;
    struct ic_background *bg;
    struct ic_pool *next; /* spun off for the next background run, not started yet */
    double batch_started;
    bool off; /* out of memory, no spool, or no copy could be made: nothing more runs early */
};

struct ic_early *ic_early_open(struct ic_session *session, const struct ic_filter *filter,
                               const struct ic_ledger *ledger)
{
    struct ic_early *early = calloc(1, sizeof(*early));
    if (early) {
        early->session = session;
        early->filter = filter;
        early->ledger = ledger;
    }
    return early;
}

/* Called from the background thread: the case's line goes to the spool (a result that cannot
 * be written there is left to the run). */
static void ic_early_result(void *context, size_t index, const struct ic_result *res)
{
    struct ic_early *early = context;
    struct ic_early_line *line = &early->lines[index];
    if (ic_stream_write_case(&early->spool, &early->todo[index], res, &line->offset) < 0)
        return;
    line->length = (size_t)(early->spool.written - line->offset);
    line->fields =
        (struct ic_result_packed){res->outcome, res->rule, res->side, res->severity, NULL};
    line->finished = true;
}

/* Ends the background run, and moves the cases it finished from `todo` to `done`. */
static void ic_early_stop_batch(struct ic_early *early)
{
    ic_background_stop(early->bg, IC_EARLY_GRACE_S);
    early->bg = NULL;
    size_t kept = 0;
    for (size_t i = 0; i < early->ntodo; i++) {
        struct ic_early_done *done =
            i < early->batch_count && early->lines[i].finished
                ? ic_grow(early->done, &early->done_capacity, early->ndone, sizeof(*done), 1024)
                : NULL;
        if (done) {
            early->done = done;
            early->done[early->ndone++] = (struct ic_early_done){early->todo[i], early->lines[i]};
        } else {
            early->todo[kept++] = early->todo[i]; /* out of memory: it runs again, in the run */
        }
    }
    early->ntodo = kept;
    early->batch_count = 0;
}

void ic_early_stop(struct ic_early *early)
{
    if (!early)
        return;
    ic_early_stop_batch(early);
    ic_pool_absorb(early->session->pool, early->next);
    early->next = NULL;
}

/* `into` gets the indexes of `from` that `also` (the user's selection) has too; with
 * `consumers`, but those whose probe says they compile for each new shape and dtype
 * ("compiles", probes/README.md): each background run is a fresh copy of discovery's worker,
 * and every one that ran such a consumer's cases compiled its shapes again (on --all, JAX's
 * early cases cost 2.1 s of compiles in three copies), which the run's workers then paid
 * once more. */
static int ic_early_intersect(const struct ic_catalog *catalog, const struct ic_libset *from,
                              const struct ic_libset *also, bool consumers, struct ic_libset *into)
{
    for (int i = 0; i < catalog->count; i++) {
        if (!ic_libset_has(from, i) || !ic_libset_has(also, i))
            continue;
        if (consumers && catalog->libs[i].compiles)
            continue;
        if (ic_libset_add(into, i) < 0)
            return IC_ENOMEM;
    }
    return 0;
}

/* Lists the cases the plan runs among `producers` x `consumers` (and the reference consumer
 * when `reference`), as the run's selection has them, on the CPU. */
static int ic_early_plan_pairs(struct ic_early *early, const struct ic_libset *producers,
                               const struct ic_libset *consumers, bool reference)
{
    const struct ic_catalog *catalog = &early->session->catalog;
    struct ic_filter filter = *early->filter;
    struct ic_plan plan = {0};
    filter.producers = (struct ic_libset){0};
    filter.consumers = (struct ic_libset){0};
    filter.reference_consumer = reference && early->filter->reference_consumer;
    int rc =
        ic_early_intersect(catalog, producers, &early->filter->producers, false, &filter.producers);
    if (rc == 0)
        rc = ic_early_intersect(catalog, consumers, &early->filter->consumers, true,
                                &filter.consumers);
    if (rc == 0)
        rc = ic_plan_build(catalog, &filter, 1u << IC_KIND_CPU, &plan);
    for (size_t i = 0; rc == 0 && i < plan.count; i++) {
        if (!plan.items[i].run)
            continue;
        struct ic_case *todo =
            ic_grow(early->todo, &early->todo_capacity, early->ntodo, sizeof(*todo), 1024);
        if (!todo) {
            rc = IC_ENOMEM;
            break;
        }
        early->todo = todo;
        early->todo[early->ntodo++] = plan.items[i].c;
    }
    ic_plan_release(&plan);
    ic_filter_release(&filter);
    return rc;
}

/* Lists the pairs the libraries discovery imported since the last call add: each new
 * producer with every consumer imported so far, and the earlier producers with each new
 * consumer; a library at a time, so that the plans made for it (whose cases the plan decides
 * are planned too) stay small. */
static int ic_early_plan_new(struct ic_early *early)
{
    const struct ic_catalog *catalog = &early->session->catalog;
    struct ic_libset fresh = {0}, both = {0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < catalog->order_count; i++) {
        if (!ic_libset_has(&early->planned, catalog->order[i]))
            rc = ic_libset_add(&fresh, catalog->order[i]);
    }
    if (rc == 0)
        rc = ic_libset_merge(&both, &early->planned);
    if (rc == 0)
        rc = ic_libset_merge(&both, &fresh);
    for (int i = 0; rc == 0 && i < catalog->order_count; i++) {
        int index = catalog->order[i];
        struct ic_libset one = {0};
        if (!ic_libset_has(&fresh, index))
            continue;
        rc = ic_libset_add(&one, index);
        if (rc == 0)
            rc = ic_early_plan_pairs(early, &one, &both, true);
        if (rc == 0)
            rc = ic_early_plan_pairs(early, &early->planned, &one, false);
        ic_libset_release(&one);
    }
    if (rc == 0)
        rc = ic_libset_merge(&early->planned, &fresh);
    ic_libset_release(&fresh);
    ic_libset_release(&both);
    return rc;
}

/* The next background run's cases: every listed case without a result, but those of pairs
 * isolated in the session's pool, which leave the list for the run. */
static int ic_early_make_batch(struct ic_early *early)
{
    struct ic_pool *pool = early->session->pool;
    size_t kept = 0;
    for (size_t i = 0; i < early->ntodo; i++) {
        const struct ic_case *c = &early->todo[i];
        if (!ic_pool_pair_isolated(pool, c->producer, c->consumer, c->protocol))
            early->todo[kept++] = *c;
    }
    early->ntodo = kept;
    free(early->lines);
    early->lines = calloc(kept ? kept : 1, sizeof(*early->lines));
    if (!early->lines)
        return IC_ENOMEM;
    early->batch_count = kept;
    return 0;
}

static bool ic_early_has_new(const struct ic_early *early)
{
    const struct ic_catalog *catalog = &early->session->catalog;
    for (int i = 0; i < catalog->order_count; i++) {
        if (!ic_libset_has(&early->planned, catalog->order[i]))
            return true;
    }
    return false;
}

/* Whether the running background run should give way to one with the pairs of the libraries
 * imported since it started (see IC_EARLY_REFILL_S and IC_EARLY_REFILL_GAP_S). */
static bool ic_early_refill_due(const struct ic_early *early)
{
    size_t pending = ic_background_pending(early->bg);
    size_t finished = early->batch_count - pending;
    double elapsed = ic_wall_s() - early->batch_started;
    return elapsed >= IC_EARLY_REFILL_GAP_S ||
           (double)pending * elapsed < IC_EARLY_REFILL_S * (double)(finished ? finished : 1);
}

/* Before discovery asks for its next import: whether a new background run is due (libraries
 * came since the running one started, and it is nearly through; or it ended on a crash with
 * cases left), and if so the copy of discovery's worker it will run in, made now, while that
 * worker is between two imports. */
static void ic_early_next(struct ic_early *early)
{
    struct ic_pool *pool = early->session->pool;
    if (!ic_pool_may_spin_off(pool)) {
        ic_early_stop(early); /* a prewarming worker imports beside discovery now */
        return;
    }
    if (early->next)
        return; /* the last import was not asked for after all: it starts at the next one */
    bool due = ic_early_has_new(early);
    if (early->bg && ic_background_running(early->bg))
        due = due && ic_early_refill_due(early);
    else if (early->bg)
        due = due || ic_background_pending(early->bg) > 0;
    if (due && ic_pool_spin_off(pool, &early->next) == IC_ECHILD)
        early->off = true; /* no copy could be made: none is tried again */
}

/* While discovery's worker imports: the background run gives way to one in the copy made
 * before, with what it left and the pairs of the libraries imported since it started. */
static void ic_early_start_next(struct ic_early *early)
{
    struct ic_pool *pool = early->session->pool;
    struct ic_pool *next = early->next;
    early->next = NULL;
    ic_early_stop_batch(early);
    int rc = early->spool_open ? 0 : ic_stream_open_spool(&early->spool);
    early->spool_open = rc == 0;
    if (rc == 0)
        rc = ic_early_plan_new(early);
    if (rc == 0 && early->ledger)
        rc = ic_run_ledger_apply(early->ledger, early->session);
    if (rc == 0)
        rc = ic_early_make_batch(early);
    if (rc == 0 && early->batch_count > 0) {
        early->batch_started = ic_wall_s();
        rc = ic_background_start(pool, next, early->todo, early->batch_count, ic_early_result,
                                 early, &early->bg);
    } else {
        early->batch_count = 0;
        ic_pool_absorb(pool, next);
    }
    if (rc < 0) {
        ic_early_stop_batch(early);
        early->off = true;
    }
}

void ic_early_between(void *context, const struct ic_library *lib, enum ic_discover_step step)
{
    struct ic_early *early = context;
    if (early->off)
        return;
    if (step == IC_DISCOVER_NEXT) {
        if (!lib->preloaded)
            ic_early_next(early);
    } else if (early->next) {
        ic_early_start_next(early);
    }
}

/* ic_early_take's look-up: the finished cases in an open-addressed table keyed by every field
 * of the case (what its id spells), so that matching the plan's items costs no formatting. */
static uint64_t ic_early_case_hash(const struct ic_case *c)
{
    uint64_t h = ic_text_hash(c->producer) * 31 + ic_text_hash(c->consumer);
    const int fields[] = {(int)c->protocol, (int)c->device.kind, c->device.id,
                          (int)c->dtype,    (int)c->layout,      (int)c->variant};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        h = (h ^ (uint64_t)(unsigned)fields[i]) * 1099511628211ull;
    return h;
}

static bool ic_early_case_equal(const struct ic_case *a, const struct ic_case *b)
{
    return a->protocol == b->protocol && a->device.kind == b->device.kind &&
           a->device.id == b->device.id && a->dtype == b->dtype && a->layout == b->layout &&
           a->variant == b->variant && strcmp(a->producer, b->producer) == 0 &&
           strcmp(a->consumer, b->consumer) == 0;
}

int ic_early_take(struct ic_early *early, struct ic_plan *plan, struct ic_stream *stream,
                  ic_early_take_fn take, void *context)
{
    if (!early || early->ndone == 0)
        return 0;
    size_t size = 64;
    while (size < 2 * early->ndone)
        size *= 2;
    size_t *table = calloc(size, sizeof(*table)); /* index in `done` + 1; 0: empty */
    if (!table)
        return IC_ENOMEM;
    for (size_t i = 0; i < early->ndone; i++) {
        size_t at = (size_t)ic_early_case_hash(&early->done[i].c) & (size - 1);
        while (table[at])
            at = (at + 1) & (size - 1);
        table[at] = i + 1;
    }
    int taken = 0, rc = 0;
    for (size_t i = 0; rc == 0 && i < plan->count; i++) {
        struct ic_planned *item = &plan->items[i];
        if (!item->run || item->done)
            continue;
        size_t at = (size_t)ic_early_case_hash(&item->c) & (size - 1);
        while (table[at] && !ic_early_case_equal(&early->done[table[at] - 1].c, &item->c))
            at = (at + 1) & (size - 1);
        if (!table[at])
            continue;
        const struct ic_early_line *line = &early->done[table[at] - 1].line;
        int64_t offset;
        rc = ic_stream_copy_line(stream, &early->spool, line->offset, line->length, &offset);
        if (rc == 0) {
            take(context, item, &line->fields, offset);
            taken++;
        }
    }
    free(table);
    return rc < 0 ? rc : taken;
}

void ic_early_close(struct ic_early *early)
{
    if (!early)
        return;
    ic_early_stop(early);
    if (early->spool_open)
        ic_stream_close(&early->spool, false);
    free(early->todo);
    free(early->lines);
    free(early->done);
    ic_libset_release(&early->planned);
    free(early);
}
