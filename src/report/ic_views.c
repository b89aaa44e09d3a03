#include "ic_views.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_outputs.h"
#include "ic_report.h"
#include "ic_report_html.h"
#include "ic_report_junit.h"
#include "ic_report_markdown.h"
#include "ic_rules.h"
#include "ic_text.h"

/* Room for the unmatched-entry lines of ic_expect_apply: one "FILE:LINE: PATTERN" each. */
#define IC_UNMATCHED_MAX (64 * 1024)

/* Warns on stderr about each "FILE:LINE: PATTERN" line of `unmatched`. */
static void ic_views_warn_unmatched(char *unmatched)
{
    char *save = NULL;
    for (char *line = strtok_r(unmatched, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char shown[1200]; /* a file name and a pattern, escaped */
        ic_text_for_terminal(shown, sizeof(shown), line);
        fprintf(stderr,
                "interopcheck: warning: %s matches no case of this report (a stale "
                "expectation?)\n",
                shown);
    }
}

int ic_views_expect(const struct ic_expectations *expectations, cJSON *report, char *err,
                    size_t err_size)
{
    char *unmatched = calloc(1, IC_UNMATCHED_MAX);
    if (!unmatched) {
        snprintf(err, err_size, "out of memory while applying expectations");
        return IC_ENOMEM;
    }
    int changed = ic_expect_apply(expectations, report, unmatched, IC_UNMATCHED_MAX);
    if (changed < 0) {
        snprintf(err, err_size, "cannot apply expectations: %s", ic_strerror(changed));
        free(unmatched);
        return changed;
    }
    ic_views_warn_unmatched(unmatched);
    free(unmatched);
    int rc = ic_report_recount(report);
    if (rc < 0) {
        snprintf(err, err_size, "cannot recount the summary: %s", ic_strerror(rc));
        return rc;
    }
    return changed;
}

int ic_views_expect_cases(const struct ic_expectations *expectations, cJSON *report,
                          struct ic_cases *cases, const bool *matched, char *err, size_t err_size)
{
    int rc = ic_report_recount_from(report, cases);
    if (rc < 0) {
        snprintf(err, err_size, "cannot recount the summary: %s", ic_strerror(rc));
        return rc;
    }
    char *unmatched = calloc(1, IC_UNMATCHED_MAX);
    if (!unmatched) {
        snprintf(err, err_size, "out of memory while applying expectations");
        return IC_ENOMEM;
    }
    ic_expect_list_unmatched(expectations, matched, unmatched, IC_UNMATCHED_MAX);
    ic_views_warn_unmatched(unmatched);
    free(unmatched);
    return 0;
}

int ic_views_write(const cJSON *report, struct ic_cases *cases, const char *json_path,
                   const struct ic_views_request *opts, char *err, size_t err_size)
{
    char html_path[PATH_MAX];
    int rc;

    if (opts->html)
        snprintf(html_path, sizeof(html_path), "%s", opts->html);
    else
        ic_output_sibling(json_path, ".html", html_path, sizeof(html_path)); /* RUN.html */
    rc = opts->html_cases
             ? ic_html_write_collected(report, opts->html_cases, html_path, err, err_size)
             : ic_html_write(report, cases, html_path, err, err_size);
    if (rc < 0)
        goto done;
    printf("html: %s\n", html_path);
    if (opts->junit) {
        rc = ic_junit_write(report, cases, opts->junit, opts->junit_cases, opts->junit_unsupported,
                            err, err_size);
        if (rc < 0)
            goto done;
        printf("junit: %s\n", opts->junit);
    }
    if (opts->markdown) {
        /* The summary may be cut to fit a CI comment; it points to the JSON for the rest. */
        size_t cap = opts->markdown_max ? opts->markdown_max : IC_MARKDOWN_DEFAULT_MAX;
        rc = ic_markdown_write(report, cases, opts->markdown, cap, json_path, err, err_size);
        if (rc < 0)
            goto done;
        printf("markdown: %s\n", opts->markdown);
    }
done:
    return rc;
}

void ic_views_print_findings(FILE *out, const cJSON *report, const char *json_path, int max_other)
{
    const cJSON *findings = ic_json_get(report, "findings");
    int total = cJSON_GetArraySize(findings);
    if (total == 0)
        return;
    int counts[IC_CLASS_COUNT] = {0};
    size_t cases = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, findings)
    {
        enum ic_severity_class c = IC_CLASS_HARMFUL;
        ic_severity_from_name(ic_json_string(f, "severity"), &c);
        counts[c]++;
        cases += ic_json_count(ic_json_get(f, "count"));
    }
    fprintf(out, "\n%d finding%s in %zu failing cases:", total, total == 1 ? "" : "s", cases);
    for (int c = 0; c < IC_CLASS_COUNT; c++) {
        if (counts[c])
            fprintf(out, " %d %s", counts[c], ic_severity_name(c));
    }
    fprintf(out, "\n");
    const char *shown_class = NULL;
    int other = 0, hidden = 0;
    cJSON_ArrayForEach(f, findings)
    {
        const char *severity = ic_json_string_or(f, "severity", "harmful");
        bool harmful = strcmp(severity, "harmful") == 0;
        if (!harmful && other++ >= max_other) {
            hidden++;
            continue;
        }
        if (!shown_class || strcmp(shown_class, severity) != 0) {
            fprintf(out, "  %s:\n", severity);
            shown_class = severity;
        }
        /* Escaped, so a library's ANSI sequences and line breaks show as text on one line. */
        char id[IC_TEXT_CAP_MIN * 2], text[240];
        ic_text_for_terminal(id, sizeof(id), ic_json_string_or(f, "id", "?"));
        ic_text_for_terminal(text, sizeof(text), ic_json_string_or(f, "diagnostic", ""));
        fprintf(out, "  %5.0f  %-48s %s\n", cJSON_GetNumberValue(ic_json_get(f, "count")), id,
                text);
    }
    if (hidden)
        fprintf(out, "  ... and %d more finding%s in the report\n", hidden, hidden == 1 ? "" : "s");
    fprintf(out, "each finding's cases and reproducer: interopcheck repro %s FINDING\n", json_path);
}
