/*
 * write_reports: calls the JUnit and Markdown writers on a report file, for test_reports.py.
 * The `report` command writes the same files; this harness also takes a Markdown cap, so the
 * test can make the cut happen on a small report.
 *
 * Usage: write_reports RUN.json [--junit FILE] [--markdown FILE] [--max BYTES]
 *                               [--full-report TEXT]
 * Exit status: 0 when every file was written, 1 when a writer failed (its message on stderr),
 * 2 for a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_cases.h"
#include "ic_error.h"
#include "ic_report.h"
#include "ic_report_junit.h"
#include "ic_report_markdown.h"

int main(int argc, char **argv)
{
    const char *input = NULL, *junit = NULL, *markdown = NULL, *full_report = NULL;
    size_t max_bytes = IC_MARKDOWN_DEFAULT_MAX;
    char err[1200];
    cJSON *report = NULL;
    int status = 0;

    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--junit") == 0 && value)
            junit = argv[++i];
        else if (strcmp(argv[i], "--markdown") == 0 && value)
            markdown = argv[++i];
        else if (strcmp(argv[i], "--max") == 0 && value)
            max_bytes = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--full-report") == 0 && value)
            full_report = argv[++i];
        else if (argv[i][0] != '-' && !input)
            input = argv[i];
        else {
            fprintf(stderr, "write_reports: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!input) {
        fprintf(stderr, "usage: write_reports RUN.json [--junit FILE] [--markdown FILE] "
                        "[--max BYTES] [--full-report TEXT]\n");
        return 2;
    }
    if (ic_report_load(input, &report, err, sizeof(err)) < 0) {
        fprintf(stderr, "write_reports: %s\n", err);
        return 1;
    }
    struct ic_cases_array cases;
    ic_cases_of_array(&cases, cJSON_GetObjectItemCaseSensitive(report, "cases"));
    if (junit && ic_junit_write(report, &cases.base, junit, true, true, err, sizeof(err)) < 0) {
        fprintf(stderr, "write_reports: junit: %s\n", err);
        status = 1;
    }
    if (markdown && ic_markdown_write(report, &cases.base, markdown, max_bytes, full_report, err,
                                      sizeof(err)) < 0) {
        fprintf(stderr, "write_reports: markdown: %s\n", err);
        status = 1;
    }
    cJSON_Delete(report);
    return status;
}
