/*
 * ic_early: the cases of a run that start while discovery still imports.
 *
 * Discovery imports every selected library in one worker, one after another, for seconds,
 * while the other cores wait. Between two imports, the pairs of the libraries imported so far
 * can already run: ic_early_between has a copy of discovery's worker made as it stands, and
 * while the next import runs, plans those pairs and hands them to a background run
 * (ic_background.h) in that copy. At a later boundary, once that run is nearly through and
 * more libraries have come, a new copy takes what it left with the new pairs. ic_early_stop ends it
 * before the run's own workers start; ic_early_take then hands each result to the run, matched
 * against the run's plan by case id, as if the run's workers had made it: the same checks in a
 * worker holding the pair's libraries, a verdict that does not depend on which worker ran it.
 *
 * Contract
 * - Only a plain run uses it (no --resume, --last-failed, --case or --collect-only), and only
 *   where a pool may be spun off (ic_pool_may_spin_off: two slots or more, copies allowed);
 *   elsewhere ic_early_between does nothing. CPU cases only (a CUDA device rules copies out).
 * - Pairs isolated in the session's pool (the crash ledger, applied as their libraries load,
 *   and pairs that crashed or hung in an earlier background run) are left to the run, which
 *   forks for them; a crash or hang ends the background run it happened in, and its case
 *   keeps its result (crash, timeout).
 * - A case whose plan item the run's plan lacks (a library discovery later failed) is
 *   dropped; a case that has no result when the background run stops runs in the run.
 * - The background thread writes each result as its case line (ic_stream_write_case) into a
 *   spool, a temporary file of the early run's own, and ic_early_take copies the lines into
 *   the run's stream; the early run keeps a few dozen bytes a case besides. Between
 *   ic_early_open and ic_early_stop the caller touches the early run only through
 *   ic_early_between (discovery's thread, at its boundaries). ic_early_close releases
 *   everything, stopping a background run still going.
 */
#ifndef IC_EARLY_H
#define IC_EARLY_H

#include <stddef.h>
#include <stdint.h>

#include "ic_ledger.h"
#include "ic_plan.h"
#include "ic_session.h"
#include "ic_stream.h"

struct ic_early;

/* `filter` (the run's selection) and `ledger` (NULL: none) outlive the early run. NULL when
 * out of memory. */
struct ic_early *ic_early_open(struct ic_session *session, const struct ic_filter *filter,
                               const struct ic_ledger *ledger);

/* Discovery's hook (struct ic_session's `between`): before it asks for the import of `lib`,
 * the copy of its worker for a new background run is made if one is due (not before a library
 * discovery found imported already: its load is over in milliseconds, and the next boundary
 * comes with its pairs too); while the import runs, that background run replaces the last. */
void ic_early_between(void *early, const struct ic_library *lib, enum ic_discover_step step);

void ic_early_stop(struct ic_early *early);

/* Called for each plan item that has a result from the early run: its outcome and
 * attribution, and where its line starts in the run's stream. */
typedef void (*ic_early_take_fn)(void *context, struct ic_planned *item,
                                 const struct ic_result_packed *fields, int64_t stream_offset);

/* After ic_early_stop: copies the line of every early result whose case is a plan item still
 * to run (run set, not done) to `stream` as it is, and hands the item to `take`. Returns how
 * many, IC_ENOMEM, or IC_EIO when a file failed (the items taken so far are the caller's). */
int ic_early_take(struct ic_early *early, struct ic_plan *plan, struct ic_stream *stream,
                  ic_early_take_fn take, void *context);

void ic_early_close(struct ic_early *early);

#endif
