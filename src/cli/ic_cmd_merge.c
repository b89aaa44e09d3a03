/*
 * `interopcheck merge A.json B.json ... -o ALL.json`: one report out of several (ic_merge.h),
 * written atomically. Exit status 0 when written, 2 when an input cannot be merged or the output
 * cannot be written (nothing is written then).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ic_commands.h"
#include "ic_error.h"
#include "ic_merge.h"
#include "ic_outputs.h"
#include "ic_report.h"

int ic_cmd_merge(const struct ic_options *opts)
{
    cJSON **reports = calloc((size_t)opts->nfiles, sizeof(*reports));
    cJSON *merged = NULL;
    char err[1024];
    int status = IC_EXIT_USAGE;
    int loaded = 0;

    if (!reports) {
        fprintf(stderr, "interopcheck: merge: out of memory\n");
        return IC_EXIT_USAGE;
    }
    if (ic_output_check(opts->output, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: merge: %s\n", err);
        goto done;
    }
    for (; loaded < opts->nfiles; loaded++) {
        if (ic_report_read(opts->files[loaded], &reports[loaded], err, sizeof(err)) < 0) {
            fprintf(stderr, "interopcheck: merge: %s\n", err);
            goto done;
        }
    }
    if (ic_merge_reports((const cJSON *const *)reports, opts->files, opts->nfiles, &merged, err,
                         sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: merge: %s\n", err);
        goto done;
    }
    if (ic_json_write_atomic(opts->output, merged, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: merge: %s\n", err);
        goto done;
    }
    const cJSON *environments = cJSON_GetObjectItemCaseSensitive(merged, "environments");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(merged, "summary"), "total");
    printf("interopcheck: merged %d reports into %s: %d environments, %.0f cases\n", opts->nfiles,
           opts->output, cJSON_GetArraySize(environments), cJSON_GetNumberValue(total));
    const cJSON *entry;
    cJSON_ArrayForEach(entry, environments)
    {
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(entry, "environment");
        const cJSON *platform = cJSON_GetObjectItemCaseSensitive(env, "platform");
        const cJSON *python = cJSON_GetObjectItemCaseSensitive(env, "python");
        const char *host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(platform, "host"));
        const char *version =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(python, "version"));
        printf("  %s: host %s, Python %s\n",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "id")),
               host ? host : "?", version ? version : "?");
    }
    status = IC_EXIT_OK;
done:
    for (int i = 0; i < loaded; i++)
        cJSON_Delete(reports[i]);
    free(reports);
    cJSON_Delete(merged);
    return status;
}
