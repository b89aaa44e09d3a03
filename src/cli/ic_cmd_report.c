/*
 * interopcheck report RUN.json|RUN.jsonl [--html FILE] [--junit FILE] [--markdown FILE]
 *                    [--expect FILE ...]
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
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ic_commands.h"
#include "ic_error.h"
#include "ic_expect.h"
#include "ic_outputs.h"
#include "ic_report.h"
#include "ic_views.h"

/* A stream (RUN.jsonl, left by a run that was killed) is rebuilt into RUN.json when that
 * does not exist yet, so that the views have the JSON report they point to. */
static int ic_report_from_stream(const char *stream, const cJSON *report, char *json_path,
                                 size_t size, char *err, size_t err_size)
{
    struct stat st;
    ic_output_sibling(stream, ".json", json_path, size);
    if (stat(json_path, &st) == 0)
        return 0;
    int rc = ic_output_check(json_path, err, err_size);
    if (rc == 0)
        rc = ic_json_write_atomic(json_path, report, err, err_size);
    if (rc == 0)
        printf("report: %s (rebuilt from %s%s)\n", json_path, stream,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(report, "interrupted"))
                   ? ", which the run did not finish"
                   : "");
    return rc;
}

/* The views this command will write, checked before any is written. */
static int ic_report_views_checked(const char *path, const struct ic_options *opts, char *err,
                                   size_t err_size)
{
    struct ic_output_list outputs = {0};
    char html[PATH_MAX];
    ic_output_sibling(path, ".html", html, sizeof(html));
    int rc = ic_output_list_add(&outputs, opts->html ? opts->html : html);
    if (rc == 0)
        rc = ic_output_list_add(&outputs, opts->junit);
    if (rc == 0)
        rc = ic_output_list_add(&outputs, opts->markdown);
    if (rc < 0)
        snprintf(err, err_size, "out of memory");
    if (rc == 0)
        rc = ic_output_list_check(&outputs, err, err_size);
    ic_output_list_release(&outputs);
    return rc;
}

int ic_cmd_report(const struct ic_options *opts)
{
    const char *path = opts->files[0];
    char json_path[PATH_MAX];
    struct ic_expectations *expectations = NULL;
    cJSON *report = NULL;
    char err[2048];
    int status = IC_EXIT_USAGE;

    snprintf(json_path, sizeof(json_path), "%s", path);
    if (ic_report_views_checked(path, opts, err, sizeof(err)) < 0 ||
        ic_report_read(path, &report, err, sizeof(err)) < 0)
        goto done;
    if (ic_stream_is_path(path) &&
        ic_report_from_stream(path, report, json_path, sizeof(json_path), err, sizeof(err)) < 0)
        goto done;
    if (opts->nexpect > 0) {
        if (ic_expect_load(opts->expect, opts->nexpect, &expectations, err, sizeof(err)) < 0)
            goto done;
        int changed = ic_views_expect(expectations, report, err, sizeof(err));
        if (changed < 0)
            goto done;
        printf("expectations: %d case%s changed\n", changed, changed == 1 ? "" : "s");
    }
    struct ic_views_request views = ic_views_asked(opts);
    struct ic_cases_array cases;
    ic_cases_of_array(&cases, cJSON_GetObjectItemCaseSensitive(report, "cases"));
    if (ic_views_write(report, &cases.base, json_path, &views, err, sizeof(err)) < 0)
        goto done;
    status = IC_EXIT_OK;
done:
    if (status != IC_EXIT_OK)
        fprintf(stderr, "interopcheck: %s\n", err);
    ic_expect_free(expectations);
    cJSON_Delete(report);
    return status;
}
