/*
 * ic_diff: what changed between two reports (a base, usually the main branch or the last
 * release, and a newer one): for a terminal or for a pull request.
 *
 * Contract
 * - Cases are aligned by id. When both reports are merged (ic_merge.h), by (environment, id)
 *   within the environments whose ids are in both; environments in one report only are listed
 *   with their case counts and not compared. A merged report and a single run are not
 *   compared, nor merged reports without an environment in common (IC_EINVAL, err says why).
 * - Outcomes are ordered by severity, from best to worst:
 *       0  pass, xpass
 *       1  unsupported
 *       2  fail, error, xfail, waived
 *       3  crash, timeout
 *   xfail, xpass and waived rank as the outcome they were observed as (the case's
 *   expectation.observed) when it is recorded, so expecting a failure is not an improvement
 *   and an xfail that became an xpass is one. A case whose severity rose regressed; one whose
 *   severity fell improved; one of equal severity whose outcome, rule or diagnostic differs
 *   changed; cases of the newer report only were added, of the base only removed.
 *   Diagnostics are compared with addresses ("0x" and 8 or more hex digits) and the alignment
 *   reported for one ("aligned to N") masked: memory is laid out anew in every run.
 * - The diff borrows the reports: entries point into both trees, which must outlive it.
 *   ic_diff_release frees what ic_diff_reports allocated; on failure nothing is left to free.
 * - Writers: text for a terminal, Markdown for a pull request comment. Library text (versions,
 *   rules, diagnostics) is never written raw: control characters become spaces in text, and
 *   in Markdown it goes into code spans, so it cannot break a table, inject HTML or mention
 *   anyone. The library versions of both sides come first, changed ones marked.
 */
#ifndef IC_DIFF_H
#define IC_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

enum ic_diff_change {
    IC_DIFF_REGRESSED,
    IC_DIFF_IMPROVED,
    IC_DIFF_CHANGED,
    IC_DIFF_ADDED,
    IC_DIFF_REMOVED,
    IC_DIFF_CHANGE_COUNT
};

struct ic_diff_entry {
    enum ic_diff_change change;
    const char *environment; /* NULL unless both reports are merged */
    const char *id;
    /* The case on each side: base is NULL when it was added, head when it was removed. */
    const cJSON *base, *head;
};

/* An environment of merged reports, on either side. */
struct ic_diff_environment {
    const char *id;
    const cJSON *base, *head; /* its "environments" entry on each side, NULL where absent */
    size_t base_cases, head_cases;
};

struct ic_diff {
    const cJSON *base, *head;
    bool merged;
    struct ic_diff_entry *entries; /* by change, then environment, then id */
    size_t count;
    size_t changes[IC_DIFF_CHANGE_COUNT];
    size_t compared;                          /* cases in both */
    size_t unchanged;                         /* compared and not changed */
    struct ic_diff_environment *environments; /* merged only: base's order, then the newer's */
    size_t nenvironments;
};

enum ic_diff_format {
    IC_DIFF_TEXT,
    IC_DIFF_MARKDOWN,
};

/* Compares `base` with `head`, the newer report (both as ic_report_load returns them). */
int ic_diff_reports(const cJSON *base, const cJSON *head, struct ic_diff *ret, char *err,
                    size_t err_size);
void ic_diff_release(struct ic_diff *diff);

/* The severity of a case's outcome in the order above; unknown outcomes rank as fail. */
int ic_diff_severity(const cJSON *c);

/* Writes the diff; the names label the two sides (their file names). IC_EIO when the output
 * fails. */
int ic_diff_write(const struct ic_diff *diff, enum ic_diff_format format, const char *base_name,
                  const char *head_name, FILE *out);

#endif
