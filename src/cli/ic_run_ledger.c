#include "ic_run_ledger.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_supervisor.h"

/* The version the ledger records for library `name`: the catalog's ("-" when it has none, and
 * for the reference consumer). NULL for a library that is not loaded. */
static const char *ic_ledger_version(const struct ic_catalog *catalog, const char *name)
{
    int i = ic_catalog_find(catalog, name);
    if (i < 0)
        return strcmp(name, IC_REFERENCE_CONSUMER) == 0 ? "-" : NULL;
    const struct ic_library *lib = &catalog->libs[i];
    if (lib->state != IC_LIBRARY_LOADED)
        return NULL;
    return lib->version[0] ? lib->version : "-";
}

/* The ledger entry of case `c`'s pair, protocol and libraries' versions now. */
static bool ic_ledger_entry_of(const struct ic_catalog *catalog, const struct ic_case *c,
                               struct ic_ledger_entry *entry)
{
    const char *produced = ic_ledger_version(catalog, c->producer);
    const char *consumed = ic_ledger_version(catalog, c->consumer);
    if (!produced || !consumed)
        return false;
    memset(entry, 0, sizeof(*entry));
    entry->protocol = c->protocol;
    snprintf(entry->producer, sizeof(entry->producer), "%s", c->producer);
    snprintf(entry->producer_version, sizeof(entry->producer_version), "%s", produced);
    snprintf(entry->consumer, sizeof(entry->consumer), "%s", c->consumer);
    snprintf(entry->consumer_version, sizeof(entry->consumer_version), "%s", consumed);
    return true;
}

/* Isolates from the start the pairs the ledger names with the versions loaded now (a new
 * release of either library may have mended the crash: then its pair runs as any other). */
int ic_run_ledger_apply(const struct ic_ledger *ledger, struct ic_session *session)
{
    for (size_t i = 0; i < ledger->count; i++) {
        const struct ic_ledger_entry *e = &ledger->entries[i];
        const char *produced = ic_ledger_version(&session->catalog, e->producer);
        const char *consumed = ic_ledger_version(&session->catalog, e->consumer);
        if (produced && consumed && strcmp(produced, e->producer_version) == 0 &&
            strcmp(consumed, e->consumer_version) == 0 &&
            ic_pool_isolate_pair(session->pool, e->producer, e->consumer, e->protocol) < 0)
            return IC_ENOMEM;
    }
    return 0;
}

/* The ledger after this run: what it held of pairs this run finished no case of (an
 * interrupted run keeps those it did not reach), and every pair whose case crashed or hung now
 * (before expectations turn any into xfail). A pair that ran and did not crash leaves it.
 * Writing it is best effort: it only saves time. */
void ic_run_ledger_update(const struct ic_ledger *ledger, const struct ic_plan *plan,
                          const struct ic_catalog *catalog)
{
    struct ic_ledger next = {0};
    snprintf(next.path, sizeof(next.path), "%s", ledger->path);
    struct ic_ledger_entry entry;
    bool ok = true;
    for (size_t i = 0; ok && i < ledger->count; i++) {
        const struct ic_ledger_entry *e = &ledger->entries[i];
        bool ran = false;
        for (size_t k = 0; !ran && k < plan->count; k++) {
            const struct ic_case *c = &plan->items[k].c;
            ran = plan->items[k].run && plan->items[k].done && c->protocol == e->protocol &&
                  strcmp(c->producer, e->producer) == 0 && strcmp(c->consumer, e->consumer) == 0;
        }
        ok = ran || ic_ledger_add(&next, e) == 0;
    }
    for (size_t k = 0; ok && k < plan->count; k++) {
        const struct ic_planned *item = &plan->items[k];
        enum ic_outcome outcome = item->result.outcome;
        if (item->run && item->done &&
            (outcome == IC_OUTCOME_CRASH || outcome == IC_OUTCOME_TIMEOUT) &&
            ic_ledger_entry_of(catalog, &item->c, &entry))
            ok = ic_ledger_add(&next, &entry) == 0;
    }
    char err[512];
    if (ok && ic_ledger_save(&next, err, sizeof(err)) < 0)
        fprintf(stderr, "interopcheck: note: the crash ledger was not written (%s)\n", err);
    ic_ledger_release(&next);
}
