/* fuzz_report: the report reader (ic_report_load, src/report/ic_report.c) and what reads a loaded
 * report in place: the diff (ic_diff), the merge (ic_merge), the findings (ic_findings), the
 * recount after expectations (ic_report_recount) and the terminal list of findings
 * (ic_views). A report file may come from anywhere (a CI artefact, an older version, a hand
 * edit), so every one of them must hold up against any JSON that passes the reader's checks.
 *
 * The input is the file's contents: it is written to a file in a private temporary
 * directory and loaded from there, exactly as `interopcheck report/diff/merge/repro FILE` do.
 * The views that write files (HTML, JUnit, Markdown) are fuzz_report_views. */
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_common.h"
#include "ic_diff.h"
#include "ic_error.h"
#include "ic_findings.h"
#include "ic_merge.h"
#include "ic_report.h"
#include "ic_views.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *path;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    path = strdup(fuzz_temp_path("run.json"));
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(path && devnull);
    return 0;
}

static void fuzz_loaded(cJSON *report)
{
    char err[512];

    /* a report against itself, as `interopcheck diff` compares two files */
    struct ic_diff diff;
    if (ic_diff_reports(report, report, &diff, err, sizeof(err)) == 0) {
        size_t total = 0;
        for (int c = 0; c < IC_DIFF_CHANGE_COUNT; c++)
            total += diff.changes[c];
        FUZZ_CHECK(total == diff.count && diff.unchanged <= diff.compared);
        ic_diff_write(&diff, IC_DIFF_TEXT, "base.json", "head.json", devnull);
        ic_diff_write(&diff, IC_DIFF_MARKDOWN, "base.json", "head.json", devnull);
        ic_diff_release(&diff);
    }

    const cJSON *inputs[2] = {report, report};
    const char *names[2] = {"a.json", "b.json"};
    cJSON *merged = NULL;
    if (ic_merge_reports(inputs, names, 2, &merged, err, sizeof(err)) == 0) {
        FUZZ_CHECK(merged != NULL);
        cJSON_Delete(merged);
    }

    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    const cJSON *first = cJSON_IsArray(findings) ? findings->child : NULL;
    const cJSON *id = first ? cJSON_GetObjectItemCaseSensitive(first, "id") : NULL;
    if (cJSON_IsString(id))
        ic_findings_find(report, id->valuestring);
    ic_findings_find(report, "numpy.exchange.contents.000000");

    cJSON *copy = cJSON_Duplicate(report, true);
    if (copy) {
        ic_findings_attach_report(copy);
        cJSON_Delete(copy);
    }
    ic_report_recount(report);
    ic_views_print_findings(devnull, report, path, 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    cJSON *report = NULL;

    fuzz_write_file(path, data, size);
    err[0] = '\0';
    int rc = ic_report_load(path, &report, err, sizeof(err));
    if (rc < 0) {
        FUZZ_CHECK(report == NULL && err[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(report != NULL);
    fuzz_loaded(report);
    cJSON_Delete(report);
    return 0;
}
