/*
 * ic_findings: the findings stage. Failing, crashing and timed-out cases grouped by cause, so
 * that a maintainer reads one entry per bug instead of one line per case.
 *
 * Contract
 * - A finding is one culprit library (the side a failed check charged, or both), one rule, one
 *   severity class and one diagnostic signature: the check's note with everything that varies
 *   from case to case (numbers, addresses, dtype and layout names, the libraries' names, quoted
 *   values, what follows the first "; ") taken out. Its id is
 *   "<culprit>.<rule id>.<6 hex digits of the signature's hash>", so the same cause keeps its id
 *   from run to run and machine to machine.
 * - A case belongs to the finding of its primary failure (the failed check that gave the case
 *   its rule; a crash or a timeout: the case itself), named by the case's `finding`. Its other
 *   failed checks stay in the case. xfail cases count by the outcome they were observed as.
 * - Cases are listed as expectation patterns (ic_expect.h) that together match every case of
 *   the finding and no other case with a verdict: a pattern widens a part to `*` only where
 *   that adds no pass and no other failure (it may take in unsupported and error cases, which
 *   expectations leave alone).
 * - ic_findings_attach replaces the report's "findings" with those of `cases` (one pass over
 *   the source; the report's own "cases" member is not read). A reproducer already in the
 *   report (a merged input's) is kept by id. On failure (no memory, a source that fails, an id
 *   that is not a case id) the report may hold part of the findings; the caller drops it.
 * - A case's "finding" is a function of the case alone (ic_findings_case_finding), so a case
 *   source labels each case as it makes it; ic_findings_label labels the cases of an array in
 *   place (a report read from a file, a merge).
 */
#ifndef IC_FINDINGS_H
#define IC_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_case.h"
#include "ic_cases.h"

/* Room for a finding id: "<culprit>.<rule id>.<6 hex digits>". */
#define IC_FINDING_ID_MAX (2 * IC_NAME_MAX + 96)

/* `examples` (may be NULL): set to an array, the caller's, of each finding's example case
 * (whole, as the source gave it), in the findings' order: what a reproducer is written from,
 * without another pass over the cases. */
int ic_findings_attach(cJSON *report, struct ic_cases *cases, cJSON **examples);

/* The same in steps, for a caller that reads the cases anyway (a run writing its JSON report):
 * a collector for `ncases` cases, each case of one whole pass added in order, then the findings
 * attached as ic_findings_attach would (IC_EINVAL when fewer or more cases were added, or one
 * had no case id). The collector is the caller's, released by ic_findings_collector_free (also
 * after a failure). ic_findings_attach is exactly that, over `cases`. */
struct ic_findings_collector;
int ic_findings_collector_new(size_t ncases, bool keep_examples,
                              struct ic_findings_collector **ret);
void ic_findings_collector_add(struct ic_findings_collector *col, const cJSON *c);
int ic_findings_collector_attach(struct ic_findings_collector *col, cJSON *report,
                                 cJSON **examples);
void ic_findings_collector_free(struct ic_findings_collector *col);

/* Writes the id of the finding case `c` belongs to into id (always terminated) and returns 1;
 * returns 0 with an empty id when the case is not a failure. */
int ic_findings_case_finding(const cJSON *c, char *id, size_t size);

/* Sets every case's "finding" in the array `cases` (removes it from a case that is not a
 * failure). IC_ENOMEM. */
int ic_findings_label(cJSON *cases);

/* Both for a report that holds its cases: labels them (ic_findings_label), then attaches the
 * findings of its "cases" array. IC_EINVAL when it has none. */
int ic_findings_attach_report(cJSON *report);

/* The finding `id` of a report, or NULL. */
const cJSON *ic_findings_find(const cJSON *report, const char *id);

/* Normalises a diagnostic into its signature (see above); `producer` and `consumer` are the
 * case's libraries. Always terminates `out`. For tests. */
void ic_findings_signature(const char *note, const char *producer, const char *consumer, char *out,
                           size_t size);

#endif
