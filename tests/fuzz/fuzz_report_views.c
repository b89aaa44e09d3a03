/* fuzz_report_views: the report reader (ic_report_load) and the views written from a loaded
 * report, as `interopcheck report FILE --junit --markdown` writes them: the HTML dashboard
 * (ic_report_html), JUnit XML with one testcase per case (ic_report_junit) and the Markdown
 * summary under a cap (ic_report_markdown). The input is the report file's contents; the
 * views go to a private temporary directory and are overwritten by the next input. Only
 * memory safety and the writers' status are checked here: the views' escaping is the
 * business of tests/integration/test_html.py and test_reports.py. */
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_common.h"
#include "ic_cases.h"
#include "ic_error.h"
#include "ic_report.h"
#include "ic_report_html.h"
#include "ic_report_junit.h"
#include "ic_report_markdown.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *path, *html, *junit, *markdown;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    path = strdup(fuzz_temp_path("run.json"));
    html = strdup(fuzz_temp_path("run.html"));
    junit = strdup(fuzz_temp_path("cases.xml"));
    markdown = strdup(fuzz_temp_path("summary.md"));
    FUZZ_CHECK(path && html && junit && markdown);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    cJSON *report = NULL;

    fuzz_write_file(path, data, size);
    if (ic_report_load(path, &report, err, sizeof(err)) < 0)
        return 0;
    /* Writing can only fail for the file system, never for what the report holds. */
    struct ic_cases_array cases;
    ic_cases_of_array(&cases, cJSON_GetObjectItemCaseSensitive(report, "cases"));
    FUZZ_CHECK(ic_junit_write(report, &cases.base, junit, true, true, err, sizeof(err)) == 0);
    FUZZ_CHECK(
        ic_markdown_write(report, &cases.base, markdown, 65536, "run.json", err, sizeof(err)) == 0);
    FUZZ_CHECK(ic_html_write(report, &cases.base, html, err, sizeof(err)) == 0);
    cJSON_Delete(report);
    return 0;
}
