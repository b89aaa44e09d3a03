/*
 * ic_plan: the plan stage. From the catalog and the user's filters, the list of cases.
 *
 * Contract
 * - For every protocol and device, every producer that exports it there and every consumer
 *   that imports it there (interopcheck's own consumer imports every protocol), the plan
 *   holds the full grid of
 *   dtypes and layouts of each variant that applies (ic_protocol.h). A case the producer
 *   cannot express (a dtype it lacks, a layout it has no view for) is in the plan, decided
 *   `unsupported` with the reason, and is not run. Pairs where one side lacks the protocol
 *   have no cases; the report explains those cells from the catalog. A device that is not
 *   available (no GPU) has no cases; the report says why once.
 * - The plan owns its array; ic_plan_release frees it. The order is stable: protocol,
 *   producer, consumer, variant, dtype, layout, following the catalog's and the tables'
 *   orders, so that cases of one pair run together and reports diff cleanly.
 */
#ifndef IC_PLAN_H
#define IC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_case.h"
#include "ic_catalog.h"
#include "ic_result.h"

/* Bit sets; an all-ones set means "no filter". Library sets hold catalog indexes (owned:
 * ic_filter_release); the reference consumer has its own flag. */
struct ic_filter {
    struct ic_libset producers;
    struct ic_libset consumers;
    bool reference_consumer;
    uint32_t protocols;
    uint32_t dtypes;
    uint32_t layouts;
    uint32_t devices; /* bit (1 << ic_device_kind) */
};

struct ic_planned {
    struct ic_case c;
    bool run;                       /* false: decided before the run (by the plan, or resumed) */
    bool done;                      /* the result is final */
    bool decided;                   /* decided by the plan: ic_plan_result makes its texts */
    struct ic_result_packed result; /* the plan's (ic_plan_release) */
    /* Where the run's result stream holds the case's line (ic_stream_read_case), 0 when it
     * does not. Once it does, the result keeps only its outcome and attribution (no blob):
     * the rest is read back from the stream, so a run of any size holds a few dozen bytes a
     * case. */
    int64_t stream_offset;
};

struct ic_plan {
    struct ic_planned *items;
    size_t count;
    size_t capacity;
};

/* A filter that selects everything. */
void ic_filter_all(struct ic_filter *filter);
void ic_filter_release(struct ic_filter *filter);

/* `available` has the bit of every device kind cases can run on (the CPU always; CUDA when
 * the driver is ready). */
int ic_plan_build(const struct ic_catalog *catalog, const struct ic_filter *filter,
                  uint32_t available, struct ic_plan *plan);

void ic_plan_release(struct ic_plan *plan);

/* The whole result of `item`: its packed result unpacked, or for a case the plan decided
 * (whose item keeps only the outcome) the same result made again from the catalog. IC_EINVAL
 * when the catalog no longer has the producer, or no longer refuses the case. */
int ic_plan_result(const struct ic_catalog *catalog, const struct ic_planned *item,
                   struct ic_result *ret);

/* What ic_plan_result_again last made in a result the caller reuses from case to case: a
 * decided case whose reason is the one already there keeps it, instead of having its 7 KB
 * cleared and its text formatted again (--all's 128 000 decided cases come in runs of one
 * reason, and each pass over the cases makes them all). Start with IC_PLAN_MADE_NONE; anything
 * else the caller writes into the result must start it again. */
struct ic_plan_made {
    bool held;    /* the result holds the refusal below */
    int producer; /* the catalog index of the last producer looked up, -1: none */
    int why, dtype, layout;
};
#define IC_PLAN_MADE_NONE ((struct ic_plan_made){.held = false, .producer = -1})

/* ic_plan_result into a result that may hold what `made` says. */
int ic_plan_result_again(const struct ic_catalog *catalog, const struct ic_planned *item,
                         struct ic_result *ret, struct ic_plan_made *made);

/* Keeps, in plan order, the cases whose id `keep` accepts, and releases the others' results
 * (--case, --last-failed). Returns how many are kept. */
size_t ic_plan_retain(struct ic_plan *plan, bool (*keep)(const char *id, const void *context),
                      const void *context);

/* Why the (protocol, device, producer, consumer) cell has no cases, or NULL when it has
 * some. */
const char *ic_plan_pair_gap(const struct ic_catalog *catalog, enum ic_protocol protocol,
                             enum ic_device_kind device, const char *producer,
                             const char *consumer, char *buf, size_t size);

#endif
