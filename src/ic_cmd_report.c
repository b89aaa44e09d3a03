/*
 * interopcheck report RUN.json [--html FILE] [--junit FILE] [--markdown FILE] [--expect FILE ...]
 *
 * Turns a report that a run wrote (or that merge made) into the views people and CI systems
 * read: the HTML dashboard always, JUnit XML and a Markdown summary when asked. Expectations
 * apply to all three. The JSON report itself is left as it is: the views are derived, and
 * running the command again with other expectations gives other views of the same run.
 *
 * The exit status says whether the views were written (0) or not (2), never how the run went:
 * that was the run's own exit status, and a CI step that publishes a report must not fail
 * because the report it publishes has failures in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_commands.h"
#include "ic_error.h"
#include "ic_expect.h"
#include "ic_report.h"
#include "ic_report_html.h"
#include "ic_report_junit.h"
#include "ic_report_markdown.h"

/* Room for the unmatched-entry lines of ic_expect_apply: one "FILE:LINE: PATTERN" each. */
#define IC_UNMATCHED_MAX (64 * 1024)

/* RUN.json -> RUN.html; a name without the .json suffix gets .html appended. */
static char *ic_default_html_path(const char *json_path)
{
    size_t len = strlen(json_path);
    const char *suffix = ".json";
    size_t suffix_len = strlen(suffix);
    if (len > suffix_len && strcmp(json_path + len - suffix_len, suffix) == 0)
        len -= suffix_len;
    char *path = malloc(len + sizeof(".html"));
    if (path) {
        memcpy(path, json_path, len);
        memcpy(path + len, ".html", sizeof(".html"));
    }
    return path;
}

/* Applies the expectations files to the report, warns about entries that matched no case
 * (they have gone stale), and recounts the summary. Returns 0 or a negative IC_E* code with
 * err saying why. */
static int ic_apply_expectations(const struct ic_options *opts, cJSON *report, char *err,
                                 size_t err_size)
{
    struct ic_expectations *expectations = NULL;
    int rc = ic_expect_load(opts->expect, opts->nexpect, &expectations, err, err_size);
    if (rc < 0)
        return rc;
    char *unmatched = calloc(1, IC_UNMATCHED_MAX);
    if (!unmatched) {
        ic_expect_free(expectations);
        snprintf(err, err_size, "out of memory while applying expectations");
        return IC_ENOMEM;
    }
    int changed = ic_expect_apply(expectations, report, unmatched, IC_UNMATCHED_MAX);
    ic_expect_free(expectations);
    if (changed < 0) {
        snprintf(err, err_size, "cannot apply expectations: %s", ic_strerror(changed));
        free(unmatched);
        return changed;
    }
    char *save = NULL;
    for (char *line = strtok_r(unmatched, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        fprintf(stderr, "interopcheck: warning: expectation matches no case: %s\n", line);
    free(unmatched);
    printf("expectations: %d case%s changed\n", changed, changed == 1 ? "" : "s");
    rc = ic_report_recount(report);
    if (rc < 0)
        snprintf(err, err_size, "cannot recount the summary: %s", ic_strerror(rc));
    return rc;
}

int ic_cmd_report(const struct ic_options *opts)
{
    const char *json_path = opts->files[0];
    cJSON *report = NULL;
    char *html_path = NULL;
    char err[2048];
    int status = IC_EXIT_USAGE;

    if (ic_report_load(json_path, &report, err, sizeof(err)) < 0)
        goto done;
    if (opts->nexpect > 0 && ic_apply_expectations(opts, report, err, sizeof(err)) < 0)
        goto done;

    html_path = opts->html ? strdup(opts->html) : ic_default_html_path(json_path);
    if (!html_path) {
        snprintf(err, sizeof(err), "out of memory");
        goto done;
    }
    if (ic_html_write(report, html_path, err, sizeof(err)) < 0)
        goto done;
    printf("html: %s\n", html_path);
    if (opts->junit) {
        if (ic_junit_write(report, opts->junit, err, sizeof(err)) < 0)
            goto done;
        printf("junit: %s\n", opts->junit);
    }
    if (opts->markdown) {
        /* The summary may be cut to fit a CI comment; it points to the JSON for the rest. */
        if (ic_markdown_write(report, opts->markdown, IC_MARKDOWN_DEFAULT_MAX, json_path, err,
                              sizeof(err)) < 0)
            goto done;
        printf("markdown: %s\n", opts->markdown);
    }
    status = IC_EXIT_OK;
done:
    if (status != IC_EXIT_OK)
        fprintf(stderr, "interopcheck: %s\n", err);
    free(html_path);
    cJSON_Delete(report);
    return status;
}
