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
static int ic_stream_finish_time(cJSON *report, const char *path)
{
    cJSON *run = ic_json_get(report, "run");
    struct stat st;
    struct tm started_tm, finished_tm;
    char finished[64];
    if (!cJSON_IsObject(run) || ic_json_get(run, "finished"))
        return 0;
    /* By the path: the FILE reads through the gzip layer, which has no descriptor to fstat
     * (a finished stream then read as one finished now). */
    if (stat(path, &st) != 0)
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

/* A stream read so far: the report its first line began (owned), and whether its end marker
 * came. */
struct ic_stream_reading {
    cJSON *report;
    cJSON *cases; /* the report's array */
    bool ended;
};

/* Takes line `number`'s value (owned) into the reading: the run line begins the report, a
 * case line joins its cases, the end line ends it; anything else is an error. */
static int ic_stream_take(struct ic_stream_reading *r, cJSON *json, size_t number,
                          const char *path, char *err, size_t err_size)
{
    const char *type = ic_json_string_or(json, "type", "");
    if (number == 1) {
        bool run = strcmp(type, "run") == 0;
        r->report = run ? ic_stream_skeleton(json, path, err, err_size) : NULL;
        cJSON_Delete(json);
        if (!r->report) {
            if (!run)
                snprintf(err, err_size, "%s is not an interopcheck result stream", path);
            return IC_EINVAL;
        }
        r->cases = ic_json_get(r->report, "cases");
    } else if (strcmp(type, "case") == 0 && !r->ended) {
        cJSON_DeleteItemFromObjectCaseSensitive(json, "type");
        cJSON_AddItemToArray(r->cases, json);
    } else if (strcmp(type, "end") == 0 && !r->ended) {
        r->ended = true;
        cJSON_Delete(json);
    } else {
        snprintf(err, err_size, "%s:%zu: a line of type \"%s\" %s", path, number, type,
                 r->ended ? "after the end" : "the stream does not have");
        cJSON_Delete(json);
        return IC_EINVAL;
    }
    return 0;
}

/* Reads every line of `file` into `r`, up to a last line without its newline (the one a
 * killed run was writing), which is left out. */
static int ic_stream_read_lines(FILE *file, struct ic_stream_reading *r, const char *path,
                                char *err, size_t err_size)
{
    char *line = NULL;
    size_t cap = 0, number = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, file)) > 0) {
        number++;
        if (line[len - 1] != '\n' && !r->ended)
            break;
        cJSON *json = ic_stream_parse_line(line, (size_t)len, number, path, err, err_size);
        rc = json ? ic_stream_take(r, json, number, path, err, err_size) : IC_EINVAL;
    }
    free(line);
    if (rc == 0 && !r->report) {
        snprintf(err, err_size, "%s is empty", path);
        rc = IC_EINVAL;
    }
    return rc;
}

int ic_stream_load(const char *path, cJSON **ret, char *err, size_t err_size)
{
    FILE *file = ic_report_open(path, "re", "", err, err_size);
    if (!file)
        return IC_EIO;
    struct ic_stream_reading r = {NULL, NULL, false};
    int rc = ic_stream_read_lines(file, &r, path, err, err_size);
    if (rc == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(r.report, "interrupted");
        if (!cJSON_AddBoolToObject(r.report, "interrupted", !r.ended) ||
            ic_report_hold_text(r.report) < 0 || ic_report_recount(r.report) < 0 ||
            ic_stream_finish_time(r.report, path) < 0 || ic_findings_attach_report(r.report) < 0) {
            snprintf(err, err_size, "out of memory while reading %s", path);
            rc = IC_ENOMEM;
        }
    }
    fclose(file);
    if (rc < 0) {
        cJSON_Delete(r.report);
        return rc;
    }
    *ret = r.report;
    return 0;
}

bool ic_stream_is_path(const char *path)
{
    size_t len = strlen(path);
    if (len > 3 && strcmp(path + len - 3, ".gz") == 0)
        len -= 3;
    return len > 6 && strncmp(path + len - 6, ".jsonl", 6) == 0;
}

int ic_report_read(const char *path, cJSON **ret, char *err, size_t err_size)
{
    return ic_stream_is_path(path) ? ic_stream_load(path, ret, err, err_size)
                                   : ic_report_load(path, ret, err, err_size);
}
