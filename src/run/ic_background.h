/*
 * ic_background: cases run in a thread of the supervisor while it goes on with discovery.
 *
 * Discovery holds the supervisor's main thread while one worker imports library after
 * library; the other cores wait. ic_background_start runs the given cases in a pool spun off
 * the discovering one (ic_pool_spin_off: one worker, a copy of discovery's as it stood), in a
 * thread of its own, with ic_pool_run; ic_background_stop ends that and gives the pool back
 * (ic_pool_absorb), so that its statistics and the pairs that crashed in it count for the run
 * that follows. The spin-off is the caller's, made between two imports; the background run
 * can start later, while discovery's worker imports the next library.
 *
 * Contract
 * - The caller keeps `cases` alive, and touches nothing `on_result` touches, from
 *   ic_background_start until ic_background_stop returns: `on_result` is called from the
 *   background thread. Between those two calls the caller may go on with discovery (the
 *   spun-off pool shares nothing discovery writes), and may read ic_background_pending.
 * - ic_background_stop sends no more cases, lets those sent end for up to `grace_s`, then
 *   kills what is still in flight (those cases get no result; the caller runs them again
 *   elsewhere), joins the thread and absorbs the pool. Cases without a result are those the
 *   caller was not called back for.
 * - Signals are blocked in the background thread: an interruption reaches the main thread,
 *   and the spun-off pool sees it through the discovering pool's stop flag.
 * - ic_background_start owns `spun_off` from the call on: a failure to start (IC_ENOMEM)
 *   absorbs it at once and leaves nothing running.
 */
#ifndef IC_BACKGROUND_H
#define IC_BACKGROUND_H

#include <stdbool.h>
#include <stddef.h>

#include "ic_supervisor.h"

struct ic_background;

int ic_background_start(struct ic_pool *pool, struct ic_pool *spun_off, const struct ic_case *cases,
                        size_t count, ic_result_fn on_result, void *context,
                        struct ic_background **ret);

/* Cases handed to ic_background_start that have no result yet. */
size_t ic_background_pending(const struct ic_background *bg);

/* False once its ic_pool_run returned: every case had a result, or its worker is gone (a
 * crash or a hang there ends it; the cases left have none). */
bool ic_background_running(const struct ic_background *bg);

/* NULL: nothing. */
void ic_background_stop(struct ic_background *bg, double grace_s);

#endif
