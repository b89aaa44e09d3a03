#include "ic_stream.h"

#include <errno.h>
#include <string.h>

#include "ic_error.h"

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

int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info)
{
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->path, sizeof(rec->path), "%s", path);
    rec->file = fopen(path, "w");
    if (!rec->file)
        return IC_EIO;
    cJSON *line = cJSON_Duplicate(run_info, true);
    if (!line || !cJSON_AddStringToObject(line, "type", "run")) {
        cJSON_Delete(line);
        return IC_ENOMEM;
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
