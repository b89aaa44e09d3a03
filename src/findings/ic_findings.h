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
 * - ic_findings_attach rewrites the report in place: it replaces "findings" and each case's
 *   "finding". A reproducer already in the report (a merged input's) is kept by id.
 *   On failure (no memory) the report may hold part of the findings; the caller drops it.
 */
#ifndef IC_FINDINGS_H
#define IC_FINDINGS_H

#include <cjson/cJSON.h>

int ic_findings_attach(cJSON *report);

/* The finding `id` of a report, or NULL. */
const cJSON *ic_findings_find(const cJSON *report, const char *id);

/* Normalises a diagnostic into its signature (see above); `producer` and `consumer` are the
 * case's libraries. Always terminates `out`. For tests. */
void ic_findings_signature(const char *note, const char *producer, const char *consumer, char *out,
                           size_t size);

#endif
