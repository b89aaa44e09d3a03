#include "ic_stream.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_report.h"

cJSON *ic_case_to_json(const struct ic_case *c, const struct ic_result *res)
{
    char id[IC_CASE_ID_MAX];
    const struct ic_variant_info *variant = ic_variant_info(c->variant);
    cJSON *json = ic_result_to_json(res);
    if (!json || ic_case_format_id(c, id, sizeof(id)) < 0)
        goto fail;
    /* Identity first, so the object reads naturally; cJSON appends, so build a new one. */
    cJSON *ordered = cJSON_CreateObject();
    if (!ordered)
        goto fail;
    if (!cJSON_AddStringToObject(ordered, "id", id) ||
        !cJSON_AddStringToObject(ordered, "protocol", ic_protocol_id(c->protocol)) ||
        !cJSON_AddStringToObject(ordered, "producer", c->producer) ||
        !cJSON_AddStringToObject(ordered, "consumer", c->consumer) ||
        !cJSON_AddStringToObject(ordered, "device", c->device) ||
        !cJSON_AddStringToObject(ordered, "dtype", ic_dtype_name(c->dtype)) ||
        !cJSON_AddStringToObject(ordered, "layout", ic_layout_name(c->layout)) ||
        !(variant->id[0] ? cJSON_AddStringToObject(ordered, "variant", variant->id)
                         : cJSON_AddNullToObject(ordered, "variant"))) {
        cJSON_Delete(ordered);
        goto fail;
    }
    while (json->child) {
        cJSON *item = json->child;
        cJSON_DetachItemViaPointer(json, item);
        cJSON_AddItemToObject(ordered, item->string, item);
        /* The library the failure is charged to, right after the side that names it. */
        if (strcmp(item->string, "side") == 0) {
            char both[2 * IC_NAME_MAX + 2];
            snprintf(both, sizeof(both), "%s+%s", c->producer, c->consumer);
            const char *culprit = res->side == IC_SIDE_PRODUCER   ? c->producer
                                  : res->side == IC_SIDE_CONSUMER ? c->consumer
                                  : strcmp(c->producer, c->consumer) == 0 ? c->producer
                                                                           : both;
            if (!cJSON_AddStringToObject(ordered, "culprit", culprit)) {
                cJSON_Delete(ordered);
                goto fail;
            }
        }
    }
    cJSON_Delete(json);
    return ordered;
fail:
    cJSON_Delete(json);
    return NULL;
}

static int ic_stream_line(struct ic_stream *rec, const cJSON *json)
{
    char *text = cJSON_PrintUnformatted(json);
    if (!text)
        return IC_ENOMEM;
    int rc = fprintf(rec->file, "%s\n", text) < 0 || fflush(rec->file) != 0 ? IC_EIO : 0;
    cJSON_free(text);
    return rc;
}

int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info,
                   const cJSON *skeleton)
{
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->path, sizeof(rec->path), "%s", path);
    rec->file = fopen(path, "we"); /* close-on-exec: no worker inherits it */
    if (!rec->file)
        return IC_EIO;
    cJSON *line = cJSON_Duplicate(run_info, true);
    if (!line || !cJSON_AddStringToObject(line, "type", "run")) {
        cJSON_Delete(line);
        return IC_ENOMEM;
    }
    if (skeleton) {
        cJSON *report = cJSON_Duplicate(skeleton, true);
        if (report)
            cJSON_DeleteItemFromObjectCaseSensitive(report, "cases"); /* one a line, below */
        if (!report || !cJSON_AddItemToObject(line, "report", report)) {
            cJSON_Delete(report);
            cJSON_Delete(line);
            return IC_ENOMEM;
        }
    }
    int rc = ic_stream_line(rec, line);
    cJSON_Delete(line);
    return rc;
}

int ic_stream_write_case(struct ic_stream *rec, const struct ic_case *c,
                           const struct ic_result *res)
{
    cJSON *json = ic_case_to_json(c, res);
    if (!json || !cJSON_AddStringToObject(json, "type", "case")) {
        cJSON_Delete(json);
        return IC_ENOMEM;
    }
    int rc = ic_stream_line(rec, json);
    cJSON_Delete(json);
    return rc;
}

int ic_stream_close(struct ic_stream *rec, bool complete)
{
    int rc = 0;
    if (!rec->file)
        return 0;
    if (complete)
        rc = fprintf(rec->file, "{\"type\":\"end\"}\n") < 0 ? IC_EIO : 0;
    if (fclose(rec->file) != 0)
        rc = IC_EIO;
    rec->file = NULL;
    return rc;
}

/* --- Reading a stream back ------------------------------------------------------------------ */

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
        snprintf(err, err_size, "%s does not start with the run line of an interopcheck result "
                 "stream (written by interopcheck 0.2 or later)", path);
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
            report = strcmp(type, "run") == 0 ? ic_stream_skeleton(json, path, err, err_size)
                                              : NULL;
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
    if (!cJSON_AddBoolToObject(report, "interrupted", !ended) || ic_report_recount(report) < 0 ||
        ic_stream_finish_time(report, file) < 0 || ic_findings_attach(report) < 0) {
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
