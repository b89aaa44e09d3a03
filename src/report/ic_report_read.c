/* ic_report_read: a report from either of its forms on disk, the JSON report or the result
 * stream a run writes as cases finish (src/record/ic_stream.h). Its contract is in
 * ic_report.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_report.h"

/* One line of the stream as JSON; NULL with the reason when it is not an object. */
static cJSON *ic_stream_parse_line(const char *line, size_t len, size_t number, const char *path,
                                   char *err, size_t err_size)
{
    cJSON *json = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(json)) {
        cJSON_Delete(json);
        snprintf(err, err_size, "%s:%zu: not a JSON object", path, number);
        return NULL;
    }
    return json;
}

/* The report skeleton of the run line, with an empty case list to fill. */
static cJSON *ic_stream_skeleton(cJSON *run_line, const char *path, char *err, size_t err_size)
{
    cJSON *report = cJSON_DetachItemFromObjectCaseSensitive(run_line, "report");
    if (!cJSON_IsObject(report) || !cJSON_AddArrayToObject(report, "cases")) {
        cJSON_Delete(report);
        snprintf(err, err_size,
                 "%s does not start with the run line of an interopcheck result "
                 "stream (written by interopcheck 0.2 or later)",
                 path);
        return NULL;
    }
    return report;
}

/* A stream says when its run started, not when it stopped: the last write to the file is
 * when the last result came, which is what "finished" means for a run that was killed. */
static int ic_stream_finish_time(cJSON *report, FILE *file)
{
    cJSON *run = cJSON_GetObjectItemCaseSensitive(report, "run");
    struct stat st;
    struct tm started_tm, finished_tm;
    char finished[64];
    if (!cJSON_IsObject(run) || cJSON_GetObjectItemCaseSensitive(run, "finished"))
        return 0;
    if (fstat(fileno(file), &st) != 0)
        st.st_mtime = time(NULL);
    gmtime_r(&st.st_mtime, &finished_tm);
    strftime(finished, sizeof(finished), "%Y-%m-%dT%H:%M:%SZ", &finished_tm);
    double duration = 0;
    const char *started = ic_json_string(run, "started");
    memset(&started_tm, 0, sizeof(started_tm));
    if (started && strptime(started, "%Y-%m-%dT%H:%M:%SZ", &started_tm))
        duration = difftime(st.st_mtime, timegm(&started_tm));
    if (!cJSON_AddStringToObject(run, "finished", finished) ||
        !cJSON_AddNumberToObject(run, "duration_s", duration > 0 ? duration : 0))
        return IC_ENOMEM;
    return 0;
}

int ic_stream_load(const char *path, cJSON **ret, char *err, size_t err_size)
{
    FILE *file = fopen(path, "re");
    char *line = NULL;
    size_t cap = 0, number = 0;
    ssize_t len;
    cJSON *report = NULL, *cases = NULL;
    bool ended = false;
    int rc = IC_EINVAL;

    if (!file) {
        snprintf(err, err_size, "cannot read %s: %s", path, strerror(errno));
        return IC_EIO;
    }
    while ((len = getline(&line, &cap, file)) > 0) {
        number++;
        bool complete = line[len - 1] == '\n';
        /* A line without its newline is the one a killed run was writing: left out. */
        if (!complete && !ended)
            break;
        cJSON *json = ic_stream_parse_line(line, (size_t)len, number, path, err, err_size);
        if (!json)
            goto done;
        const char *type = ic_json_string_or(json, "type", "");
        if (number == 1) {
            report =
                strcmp(type, "run") == 0 ? ic_stream_skeleton(json, path, err, err_size) : NULL;
            cJSON_Delete(json);
            if (!report) {
                if (strcmp(type, "run") != 0)
                    snprintf(err, err_size, "%s is not an interopcheck result stream", path);
                goto done;
            }
            cases = cJSON_GetObjectItemCaseSensitive(report, "cases");
        } else if (strcmp(type, "case") == 0 && !ended) {
            cJSON_DeleteItemFromObjectCaseSensitive(json, "type");
            cJSON_AddItemToArray(cases, json);
        } else if (strcmp(type, "end") == 0 && !ended) {
            ended = true;
            cJSON_Delete(json);
        } else {
            cJSON_Delete(json);
            snprintf(err, err_size, "%s:%zu: a line of type \"%s\" %s", path, number, type,
                     ended ? "after the end" : "the stream does not have");
            goto done;
        }
    }
    if (!report) {
        snprintf(err, err_size, "%s is empty", path);
        goto done;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(report, "interrupted");
    if (!cJSON_AddBoolToObject(report, "interrupted", !ended) || ic_report_hold_text(report) < 0 ||
        ic_report_recount(report) < 0 || ic_stream_finish_time(report, file) < 0 ||
        ic_findings_attach(report) < 0) {
        snprintf(err, err_size, "out of memory while reading %s", path);
        rc = IC_ENOMEM;
        goto done;
    }
    *ret = report;
    report = NULL;
    rc = 0;
done:
    cJSON_Delete(report);
    free(line);
    fclose(file);
    return rc;
}

bool ic_stream_is_path(const char *path)
{
    size_t len = strlen(path);
    return len > 6 && strcmp(path + len - 6, ".jsonl") == 0;
}

int ic_report_read(const char *path, cJSON **ret, char *err, size_t err_size)
{
    return ic_stream_is_path(path) ? ic_stream_load(path, ret, err, err_size)
                                   : ic_report_load(path, ret, err, err_size);
}
