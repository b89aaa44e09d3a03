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

#include "ic_commands.h"
#include "ic_error.h"
#include "ic_expect.h"
#include "ic_report.h"
#include "ic_views.h"

int ic_cmd_report(const struct ic_options *opts)
{
    const char *json_path = opts->files[0];
    struct ic_expectations *expectations = NULL;
    cJSON *report = NULL;
    char err[2048];
    int status = IC_EXIT_USAGE;

    if (ic_report_load(json_path, &report, err, sizeof(err)) < 0)
        goto done;
    if (opts->nexpect > 0) {
        if (ic_expect_load(opts->expect, opts->nexpect, &expectations, err, sizeof(err)) < 0)
            goto done;
        int changed = ic_views_expect(expectations, report, err, sizeof(err));
        if (changed < 0)
            goto done;
        printf("expectations: %d case%s changed\n", changed, changed == 1 ? "" : "s");
    }
    if (ic_views_write(report, json_path, opts, err, sizeof(err)) < 0)
        goto done;
    status = IC_EXIT_OK;
done:
    if (status != IC_EXIT_OK)
        fprintf(stderr, "interopcheck: %s\n", err);
    ic_expect_free(expectations);
    cJSON_Delete(report);
    return status;
}
