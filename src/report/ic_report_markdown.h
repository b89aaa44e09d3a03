/*
 * ic_report_markdown: a Markdown summary of a report, for a pull request comment or a CI step
 * summary (GitHub's $GITHUB_STEP_SUMMARY, GitLab notes).
 *
 * Contract
 * - Totals, one compact producer x consumer matrix per protocol and device, and the failures
 *   with their rules and diagnostics. The whole text stays under `max_bytes` (GitHub caps step
 *   summaries at 1 MiB): when it would not, the failures list is cut and a line says how many
 *   were left out and points to `full_report` (a path or URL; may be NULL).
 * - Library text is escaped for Markdown and GitHub's HTML subset (ic_text): it can neither
 *   break a table nor inject markup. Written atomically. Returns 0 or a negative IC_E* code.
 */
#ifndef IC_REPORT_MARKDOWN_H
#define IC_REPORT_MARKDOWN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define IC_MARKDOWN_DEFAULT_MAX (1000 * 1000)

int ic_markdown_write(const cJSON *report, const char *path, size_t max_bytes,
                      const char *full_report, char *err, size_t err_size);

#endif
