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
 * - All text is made safe for XML 1.0 (ic_text): escaped, invalid UTF-8 repaired, characters
 *   XML forbids replaced, long messages capped. The file is written atomically.
 * - Returns 0, or a negative IC_E* code with err saying why; nothing is left half-written.
 */
#ifndef IC_REPORT_JUNIT_H
#define IC_REPORT_JUNIT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* `per_case`: a testcase per case as well as per finding; `with_unsupported`: unsupported
 * cases among them too (as skipped), else left out: they are refusals the spec allows, and
 * on --all tens of thousands of skipped entries bury the cases CI is after. */
int ic_junit_write(const cJSON *report, const char *path, bool per_case, bool with_unsupported,
                   char *err, size_t err_size);

#endif
