/*
 * ic_cases_relay: one pass over a run's cases (ic_plan_cases), made by a thread of its own a
 * few hundred cases ahead of the reader.
 *
 * Why: the run's report stage reads its 196 000 cases in one pass that writes the JSON report
 * and fills the findings and the dashboard. Making the cases (reading the stream's lines back,
 * making the decided ones again, their text) is about a third of that work; on two cores another
 * thread makes them while the reader writes and collects. Before, two passes each made every
 * case (one wrote the JSON and collected the findings, the other filled the dashboard): --all's
 * planning, reports and stopping took 0.97-1.06 s then, 0.89-0.98 s with the relay (2 cores).
 *
 * Contract
 * - ic_cases_relay_start starts the thread, which reads `upstream` from its first case to its
 *   last and hands each case over in batches, with its text (ic_cases_text) copied; the relay's
 *   source (`cases`) yields them in the same order, with the same objects and texts, for one
 *   pass: a second ic_cases_first ends at once with IC_EINVAL.
 * - Each case lives in its batch's arena (ic_json_arena_enter), from the making thread to the
 *   reader: a case the reader was given stays as it is until its next call, then the batch may
 *   be made again. The reader does not change the cases (ic_cases.h).
 * - `upstream` is the thread's between start and finish: nobody else reads it then. It reads
 *   the plan, the catalog and the expectations, which stay unchanged until the finish.
 * - The reader's pass ends with upstream's status: the source's status is upstream's failure
 *   (its pass ended early), or IC_ENOMEM when a batch could not hold a case's text.
 * - ic_cases_relay_finish stops the thread (at once, if the reader stopped early), waits for it
 *   and frees everything: it returns the pass's status, 0 or IC_E*. The relay is gone after.
 * - Memory: three batches of at most 256 cases, each an arena of 1 MiB (a case past it takes
 *   malloc's blocks, freed when the batch is made again) and a text buffer: a few MiB, whatever
 *   the number of cases.
 */
#ifndef IC_CASES_RELAY_H
#define IC_CASES_RELAY_H

#include "ic_cases.h"
#include "ic_plan_cases.h"

struct ic_cases_relay;

/* 0 and *ret, or IC_ENOMEM / IC_EIO (no thread could be started; nothing to finish). */
int ic_cases_relay_start(struct ic_plan_cases *upstream, struct ic_cases_relay **ret);

/* The same with batches of `batch_cases` cases (1 to 256) and arenas of `arena_bytes`: for
 * tests, which cross batches and spill out of an arena with a few cases. */
int ic_cases_relay_start_sized(struct ic_plan_cases *upstream, size_t batch_cases,
                               size_t arena_bytes, struct ic_cases_relay **ret);

/* The source the reader reads (valid until the finish). */
struct ic_cases *ic_cases_relay_cases(struct ic_cases_relay *relay);

int ic_cases_relay_finish(struct ic_cases_relay *relay);

#endif
