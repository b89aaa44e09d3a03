/*
 * ic_report_junit: the JUnit XML of a report, for CI systems (GitLab, Jenkins, GitHub
 * reporters).
 *
 * Contract
 * - One <testcase> per case, grouped into <testsuite>s by protocol and producer/consumer pair
 *   (and environment, for a merged report); classname and name derive from the case id.
 * - fail, crash and timeout are <failure>s carrying the rule and diagnostic; unsupported is
 *   <skipped> with its reason; error is <error>; xfail and waived are <skipped> that say so;
 *   xpass passes with a note in <system-out>.
 * - All text is made safe for XML 1.0 (ic_text): escaped, invalid UTF-8 repaired, characters
 *   XML forbids replaced, long messages capped. The file is written atomically.
 * - Returns 0, or a negative IC_E* code with err saying why; nothing is left half-written.
 */
#ifndef IC_REPORT_JUNIT_H
#define IC_REPORT_JUNIT_H

#include <stddef.h>

#include <cjson/cJSON.h>

int ic_junit_write(const cJSON *report, const char *path, char *err, size_t err_size);

#endif
