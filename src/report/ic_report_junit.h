/*
 * ic_report_junit: the JUnit XML of a report, for CI systems (GitLab, Jenkins, GitHub
 * reporters).
 *
 * Contract
 * - The suite "interopcheck.findings" has one <testcase> per finding (classname
 *   interopcheck.findings.<culprit>, name the finding's id): a finding whose cases crashed or
 *   hung is an <error>, any other a <failure> whose type is its rule; the body holds its cases,
 *   example and reproducer. A report without findings has one passing testcase.
 * - With `per_case`, one <testcase> per case follows, grouped into <testsuite>s by protocol
 *   and producer/consumer pair (and environment, for a merged report): fail is a <failure>
 *   carrying the rule and diagnostic; crash, timeout and error are <error>s; unsupported is
 *   <skipped> with its reason (only `with_unsupported`: otherwise left out, and out of the
 *   counts); xfail and waived are <skipped> that say so; xpass passes with a note in
 *   <system-out>.
 * - The cases come from `cases` (ic_cases.h), never from the report's own "cases" member,
 *   which may be empty or absent; everything else (findings, run, environments) comes from
 *   `report`. The writer makes at most one pass over the cases (none without `per_case` when
 *   the run has a duration), and holds only a few fixed-size facts per case: each <testcase>
 *   goes to a temporary file (tmpfile(3)) as the pass reaches it, and is copied from there
 *   into the document in suite order. A suite's cases keep their report order, and suites
 *   come in the order of their first case.
 * - All text is made safe for XML 1.0 (ic_text): escaped, invalid UTF-8 repaired, characters
 *   XML forbids replaced, long messages capped. The file is written atomically.
 * - Returns 0, or a negative IC_E* code with err saying why; nothing is left half-written.
 *   A source that fails (ic_cases_status negative after the pass) makes the writer return its
 *   status, with err saying that the cases could not be read.
 */
#ifndef IC_REPORT_JUNIT_H
#define IC_REPORT_JUNIT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"

/* `per_case`: a testcase per case as well as per finding; `with_unsupported`: unsupported
 * cases among them too (as skipped), else left out: they are refusals the spec allows, and
 * on --all tens of thousands of skipped entries bury the cases CI is after. */
int ic_junit_write(const cJSON *report, struct ic_cases *cases, const char *path, bool per_case,
                   bool with_unsupported, char *err, size_t err_size);

#endif
