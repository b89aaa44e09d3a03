/*
 * ic_report_html: the dashboard of a report, one self-contained HTML file.
 *
 * Contract
 * - The file needs no network: styles, script and data are inline. It shows the environment
 *   and library versions at the top, a producer x consumer matrix per protocol and device (and
 *   environment, for a merged report) with each cell coloured by its outcomes and showing
 *   passed/total, the list of a cell's cases with their checks and diagnostics on a click, and
 *   filters by library, protocol, device, dtype, layout, outcome (and environment).
 * - The report's data is embedded as JSON that no library text can break out of (no "</" or
 *   U+2028 sequences survive; invalid UTF-8 is repaired), and the page builds its DOM with
 *   textContent only: library messages can hold any HTML or script and stay text. A
 *   Content-Security-Policy with a per-file nonce forbids every fetch and every other script.
 * - The data is compact (index tables, cases as columns, passing checks as bit masks): the full
 *   matrix's page is a fifteenth of its JSON report, and cases are drawn only when their cell
 *   is opened.
 * - The cases come from `cases` (ic_cases.h; NULL: none), read in exactly one pass; the
 *   report's own "cases" member is ignored (it may be empty or absent). Everything else (tool,
 *   run, environment, environments, findings, the summary and its gaps) comes from `report`.
 *   The writer's memory does not grow with the number of cases: it keeps the name and text
 *   tables, not the cases or the page.
 * - Written atomically: a failure leaves no file (and never half a page). Returns 0 or a
 *   negative IC_E* code with err saying why; when the case source failed, its code.
 * - A caller that reads the cases anyway (a run writing its JSON report) collects them for the
 *   page in the same pass: ic_html_collector_new, then ic_html_collector_add for each case of
 *   one whole pass, in order, then ic_html_write_collected once (writing the page joins the
 *   collected tables into the page's: a second page from it would differ). The collector owns the
 * pass's temporary files and tables, and ic_html_collector_free releases them (also after a
 *   failure, and when no page is written). ic_html_write is exactly that, over `cases`.
 *   ic_html_collector_new returns IC_ENOMEM, or IC_EIO with errno saying why no temporary
 *   file could be made.
 */
#ifndef IC_REPORT_HTML_H
#define IC_REPORT_HTML_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"

int ic_html_write(const cJSON *report, struct ic_cases *cases, const char *path, char *err,
                  size_t err_size);

/* The page's cases, collected a case at a time. */
struct ic_html_collector;

/* `report` gives the names the tables start with (its environments and libraries). */
int ic_html_collector_new(const cJSON *report, struct ic_html_collector **ret);
void ic_html_collector_add(struct ic_html_collector *col, const cJSON *c);
int ic_html_write_collected(const cJSON *report, struct ic_html_collector *cases, const char *path,
                            char *err, size_t err_size);
void ic_html_collector_free(struct ic_html_collector *col);

#endif
