/*
 * ic_expect: expectations files. A project lists the cases it knows fail, by case id or id
 * pattern, each with a reason and an optional link; a run or a report applies the list.
 *
 * Contract
 * - File format (one entry a line; '#' starts a comment; blank lines are ignored):
 *       PATTERN  REASON...  [LINK]
 *   PATTERN is a case id, or one with '*' (any run of characters within one dot-separated
 *   part) and '?' wildcards, or '**' (any run of whole parts). REASON is the rest of the line;
 *   a last word that starts with http:// or https:// is the LINK. Matching is exact per
 *   character: ids are compared, never prefixes.
 * - Applying to a report (the cJSON of ic_report.h): a case whose outcome is fail, crash or
 *   timeout and that an entry matches becomes `xfail`; a `pass` that an entry matches becomes
 *   `xpass`. The case gets an "expectation" object {pattern, reason, link, observed} where
 *   `observed` is the outcome before. The first matching entry (in file order) wins. Other
 *   outcomes (unsupported, error) are left alone: an expectation is about failures.
 * - Entries that match no case of the report are returned, so the caller can warn about
 *   stale expectations (an expectations file rots otherwise).
 * - The file is UTF-8 text (a byte order mark at its start is skipped): a NUL byte, bytes that
 *   are not well-formed UTF-8, and control characters (C0 but tab, DEL, C1) are errors that
 *   name the line and column (from 1, in characters), wherever they are, comments included.
 * - The loaded set owns its memory (ic_expect_free). Loading fails on an unreadable file or a
 *   malformed line, with err naming the file and line; nothing is applied then.
 */
#ifndef IC_EXPECT_H
#define IC_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct ic_expectations;

int ic_expect_load(const char *const *paths, int npaths, struct ic_expectations **ret, char *err,
                   size_t err_size);
void ic_expect_free(struct ic_expectations *expectations);

/* True when `pattern` matches the case id `id` (the wildcards above). */
bool ic_expect_match(const char *pattern, const char *id);

/* Applies the expectations to the report's cases (see the contract) and writes, one per
 * line into `unmatched` (may be NULL), "FILE:LINE: PATTERN" for each entry that matched no
 * case. Returns the number of cases changed, or a negative IC_E* code. The caller recounts the
 * summary (ic_report_recount). */
int ic_expect_apply(const struct ic_expectations *expectations, cJSON *report, char *unmatched,
                    size_t unmatched_size);

/* The number of entries (the size of a `matched` array). */
size_t ic_expect_count(const struct ic_expectations *expectations);

/* Applies the expectations to one case, in place, and sets matched[i] for every entry i that
 * matches its id. Returns 1 when the case's outcome changed, 0 when not, IC_ENOMEM. A case
 * source applies them this way as it makes each case (ic_plan_cases). */
int ic_expect_apply_case(const struct ic_expectations *expectations, cJSON *c, bool *matched);

/* "FILE:LINE: PATTERN" lines, one per entry whose matched[i] is false, into out (whole lines
 * only, always terminated; out may be NULL). */
void ic_expect_list_unmatched(const struct ic_expectations *expectations, const bool *matched,
                              char *out, size_t size);

#endif
