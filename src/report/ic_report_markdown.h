/*
 * ic_report_markdown: a Markdown summary of a report, for a pull request comment or a CI step
 * summary (GitHub's $GITHUB_STEP_SUMMARY, GitLab notes).
 *
 * Contract
 * - Totals, one compact producer x consumer matrix per protocol and device, and the failures
 *   with their rules and diagnostics. The whole text stays under `max_bytes` (GitHub caps step
 *   summaries at 1 MiB): when it would not, the failures list is cut and a line says how many
 *   were left out and points to `full_report` (a path or URL; may be NULL).
 * - The cases come from `cases` (ic_cases.h), never from the report's own "cases" member,
 *   which may be empty or absent; everything else (summary, findings, environments) comes
 *   from `report`. The writer makes one pass over the cases: it counts them, and keeps the
 *   rows of the cases it lists (errors, unexpected passes) only as far as `max_bytes` could
 *   show them.
 * - Library text is escaped for Markdown and GitHub's HTML subset (ic_text): it can neither
 *   break a table nor inject markup. Written atomically. Returns 0 or a negative IC_E* code
 *   with err saying why; a source that fails (ic_cases_status negative after the pass) makes
 *   the writer return its status, with err saying that the cases could not be read.
 */
#ifndef IC_REPORT_MARKDOWN_H
#define IC_REPORT_MARKDOWN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"

#define IC_MARKDOWN_DEFAULT_MAX (1000 * 1000)

int ic_markdown_write(const cJSON *report, struct ic_cases *cases, const char *path,
                      size_t max_bytes, const char *full_report, char *err, size_t err_size);

#endif
