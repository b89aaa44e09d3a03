/*
 * `interopcheck diff BASE.json NEW.json [--format text|markdown]`: what changed between two
 * reports (ic_diff.h), on stdout. Exit status 1 when a case regressed, 0 otherwise, 2 when a
 * report cannot be read or the two cannot be compared.
 */
#include <stdio.h>
#include <string.h>

#include "ic_commands.h"
#include "ic_diff.h"
#include "ic_error.h"
#include "ic_report.h"

int ic_cmd_diff(const struct ic_options *opts)
{
    cJSON *base = NULL, *head = NULL;
    struct ic_diff diff;
    char err[2048];
    int status = IC_EXIT_USAGE;
    enum ic_diff_format format =
        opts->format && strcmp(opts->format, "markdown") == 0 ? IC_DIFF_MARKDOWN : IC_DIFF_TEXT;

    if (ic_report_read(opts->files[0], &base, err, sizeof(err)) < 0 ||
        ic_report_read(opts->files[1], &head, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: diff: %s\n", err);
        goto done;
    }
    if (ic_diff_reports(base, head, &diff, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: diff: %s\n", err);
        goto done;
    }
    if (ic_diff_write(&diff, format, opts->files[0], opts->files[1], stdout) < 0)
        fprintf(stderr, "interopcheck: diff: cannot write the diff to stdout\n");
    else
        status = diff.changes[IC_DIFF_REGRESSED] ? IC_EXIT_FAILURES : IC_EXIT_OK;
    ic_diff_release(&diff);
done:
    cJSON_Delete(base);
    cJSON_Delete(head);
    return status;
}
