/*
 * ic_views: what `interopcheck run` and `interopcheck report` both do to a built report:
 * apply expectations files, and write the views people and CI read (the HTML dashboard, JUnit
 * XML, the Markdown summary) next to or instead of the JSON.
 *
 * Contract
 * - ic_views_expect applies loaded expectations to the report in place, warns on stderr about
 *   entries that match no case (a stale expectation), and recounts the summary.
 *   ic_views_expect_cases does the same for a report whose cases come from a source that
 *   applies the expectations itself (a run: ic_plan_cases), from what the source matched.
 * - The views read the cases from a case source (ic_cases.h), never from the report's own
 *   "cases" member, so a run's views are written without its cases all in memory.
 * - What these print from a report (ids, diagnostics, patterns) goes through
 *   ic_text_for_terminal: control characters and ANSI sequences show escaped, never act. On failure
 *   the report may hold changed outcomes with an old summary: the caller writes nothing.
 * - ic_views_write writes the dashboard (to views->html, or JSON_PATH with .html for .json),
 *   and JUnit and Markdown where views asks, each atomically, and prints one line "KIND: PATH"
 *   per file on stdout. It stops at the first file it cannot write, err saying which and why;
 *   files written before stay.
 */
#ifndef IC_VIEWS_H
#define IC_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"
#include "ic_expect.h"
#include "ic_report_html.h"

/* Returns the number of cases changed, or a negative IC_E* code with err saying why. */
int ic_views_expect(const struct ic_expectations *expectations, cJSON *report, char *err,
                    size_t err_size);

/* Recounts the summary from `cases`, then warns about the entries `matched` says matched no
 * case. 0, or a negative IC_E* code with err saying why. */
int ic_views_expect_cases(const struct ic_expectations *expectations, cJSON *report,
                          struct ic_cases *cases, const bool *matched, char *err, size_t err_size);

/* The views a command asks for (NULL paths: not asked; the dashboard is always written). */
struct ic_views_request {
    const char *html;     /* NULL: next to the JSON report */
    const char *junit;
    bool junit_cases;     /* a testcase per case as well as per finding */
    bool junit_unsupported; /* ... unsupported cases among them too */
    const char *markdown;
    size_t markdown_max;  /* 0: the default cap */
    /* The dashboard's cases, collected from a whole pass made anyway (the JSON report's):
     * then the dashboard makes no pass of its own. NULL: it does. Not released here. */
    struct ic_html_collector *html_cases;
};

int ic_views_write(const cJSON *report, struct ic_cases *cases, const char *json_path,
                   const struct ic_views_request *views, char *err, size_t err_size);

/* The terminal view of the report's findings, most severe first: every harmful finding (and so
 * every crash and timeout), then up to `max_other` of the others with a count of the rest.
 * Library text is shown escaped (IC_ESCAPE_TERMINAL) and cut, one line a finding. */
void ic_views_print_findings(FILE *out, const cJSON *report, const char *json_path, int max_other);

#endif
