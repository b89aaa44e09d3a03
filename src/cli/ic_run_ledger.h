/*
 * ic_run_ledger: a run's use of the crash ledger (ic_ledger.h): which pairs it isolates from
 * the start, and what the ledger holds after it.
 *
 * Contract
 * - ic_run_ledger_apply isolates in the session's pool (ic_pool_isolate_pair) each pair the
 *   ledger names with the versions loaded now; an entry whose library is not loaded (yet) is
 *   left for a later call, and a pair isolated already stays as it is, so it may be called
 *   again as discovery loads more. IC_ENOMEM.
 * - ic_run_ledger_update writes the ledger after the run: what it held of pairs the run
 *   finished no case of, and every pair whose case crashed or hung now. Writing is best
 *   effort (the ledger only saves time): a failure is a note on stderr.
 */
#ifndef IC_RUN_LEDGER_H
#define IC_RUN_LEDGER_H

#include "ic_ledger.h"
#include "ic_plan.h"
#include "ic_session.h"

int ic_run_ledger_apply(const struct ic_ledger *ledger, struct ic_session *session);

void ic_run_ledger_update(const struct ic_ledger *ledger, const struct ic_plan *plan,
                          const struct ic_catalog *catalog);

#endif
