#include "ic_views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_report.h"
#include "ic_report_html.h"
#include "ic_report_junit.h"
#include "ic_report_markdown.h"

/* Room for the unmatched-entry lines of ic_expect_apply: one "FILE:LINE: PATTERN" each. */
#define IC_UNMATCHED_MAX (64 * 1024)

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
    char *save = NULL;
    for (char *line = strtok_r(unmatched, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        fprintf(stderr,
                "interopcheck: warning: %s matches no case of this report (a stale "
                "expectation?)\n",
                line);
    free(unmatched);
    int rc = ic_report_recount(report);
    if (rc < 0) {
        snprintf(err, err_size, "cannot recount the summary: %s", ic_strerror(rc));
        return rc;
    }
    return changed;
}

/* RUN.json -> RUN.html; a name without the .json suffix gets .html appended. */
static char *ic_default_html_path(const char *json_path)
{
    static const char suffix[] = ".json";
    size_t len = strlen(json_path);
    if (len > strlen(suffix) && strcmp(json_path + len - strlen(suffix), suffix) == 0)
        len -= strlen(suffix);
    char *path = malloc(len + sizeof(".html"));
    if (path) {
        memcpy(path, json_path, len);
        memcpy(path + len, ".html", sizeof(".html"));
    }
    return path;
}

int ic_views_write(const cJSON *report, const char *json_path, const struct ic_options *opts,
                   char *err, size_t err_size)
{
    char *html_path = opts->html ? strdup(opts->html) : ic_default_html_path(json_path);
    int rc;

    if (!html_path) {
        snprintf(err, err_size, "out of memory");
        return IC_ENOMEM;
    }
    rc = ic_html_write(report, html_path, err, err_size);
    if (rc < 0)
        goto done;
    printf("html: %s\n", html_path);
    if (opts->junit) {
        rc = ic_junit_write(report, opts->junit, err, err_size);
        if (rc < 0)
            goto done;
        printf("junit: %s\n", opts->junit);
    }
    if (opts->markdown) {
        /* The summary may be cut to fit a CI comment; it points to the JSON for the rest. */
        size_t cap = opts->markdown_max ? opts->markdown_max : IC_MARKDOWN_DEFAULT_MAX;
        rc = ic_markdown_write(report, opts->markdown, cap, json_path, err, err_size);
        if (rc < 0)
            goto done;
        printf("markdown: %s\n", opts->markdown);
    }
done:
    free(html_path);
    return rc;
}
