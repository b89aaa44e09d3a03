/*
 * ic_ledger: the crash ledger. The pairs of libraries whose cases crashed or hung, per protocol,
 * in earlier runs in one Python environment, so that the next run isolates them from its start
 * (ic_pool_isolate_pair) instead of losing a worker, and every import it held, to the first
 * crash of each pair again.
 *
 * Contract
 * - It changes where cases run, never a verdict: an isolated case runs the same checks, in a
 *   child forked from a worker that holds the same imports.
 * - One file per tested interpreter, in $INTEROPCHECK_LEDGER_DIR, else the probes' cache folder
 *   ($INTEROPCHECK_CACHE_DIR, which the session sets to $XDG_CACHE_HOME/interopcheck or
 *   ~/.cache/interopcheck when the user has not; none without HOME):
 *   crashed-pairs-<16 hex digits of the interpreter path's hash>.tsv, a line per pair and
 *   protocol: protocol, producer, its version, consumer, its version, tab separated. Either
 *   variable set and empty: no ledger (the tests set INTEROPCHECK_LEDGER_DIR so, that a run
 *   does not depend on the runs before it).
 * - Reading: a missing or unreadable file is an empty ledger, a line that does not parse is
 *   skipped. Writing replaces the file atomically; the ledger only saves time, so a failure to
 *   write it is no error of the run (the caller ignores it).
 * - The ledger owns its entries; ic_ledger_release frees them.
 */
#ifndef IC_LEDGER_H
#define IC_LEDGER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "ic_case.h"

struct ic_ledger_entry {
    enum ic_protocol protocol;
    char producer[IC_NAME_MAX];
    char producer_version[64];
    char consumer[IC_NAME_MAX];
    char consumer_version[64];
};

struct ic_ledger {
    char path[PATH_MAX]; /* "" when there is no ledger */
    struct ic_ledger_entry *entries;
    size_t count, capacity;
};

/* Finds the ledger file of interpreter `python` and reads it. IC_ENOMEM only. */
int ic_ledger_open(struct ic_ledger *ledger, const char *python);

/* Adds an entry unless one for the same protocol, pair and versions is there. IC_ENOMEM. */
int ic_ledger_add(struct ic_ledger *ledger, const struct ic_ledger_entry *entry);

/* Writes the ledger's entries to its file, replacing it (creating the folder). Nothing when
 * there is no ledger. IC_EIO with err saying why. */
int ic_ledger_save(const struct ic_ledger *ledger, char *err, size_t err_size);

void ic_ledger_release(struct ic_ledger *ledger);

#endif
