#include "ic_plan_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_findings.h"
#include "ic_stream.h"

/* The case line of `item` in the stream; IC_EPROTO when the line there is another case's. */
static int ic_plan_cases_read(struct ic_plan_cases *source, const struct ic_planned *item,
                              cJSON **ret)
{
    if (!source->stream && source->stream_path[0])
        source->stream = fopen(source->stream_path, "re");
    if (!source->stream)
        return IC_EIO;
    int rc = ic_stream_read_case(source->stream, item->stream_offset, &source->line,
                                 &source->line_size, ret);
    if (rc < 0)
        return rc;
    char id[IC_CASE_ID_MAX];
    const char *read = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*ret, "id"));
    if (ic_case_format_id(&item->c, id, sizeof(id)) < 0 || !read || strcmp(read, id) != 0) {
        cJSON_Delete(*ret);
        *ret = NULL;
        return IC_EPROTO;
    }
    return 0;
}

/* The case of plan item `i`, as the report holds it, into *ret. */
static int ic_plan_cases_make(struct ic_plan_cases *source, size_t i, cJSON **ret)
{
    const struct ic_planned *item = &source->plan->items[i];
    cJSON *c = NULL;
    int rc = 0;
    /* A case the plan decided is made again (no text to read back: ic_plan_result), one in
     * the stream is read back from its line, any other was kept packed. */
    if (!item->decided && item->stream_offset > 0) {
        rc = ic_plan_cases_read(source, item, &c);
    } else {
        rc = ic_plan_result(source->catalog, item, source->scratch);
        c = rc == 0 ? ic_case_to_json(&item->c, source->scratch) : NULL;
        if (rc == 0 && !c)
            rc = IC_ENOMEM;
    }
    if (rc == 0 && source->expectations)
        rc = ic_expect_apply_case(source->expectations, c, source->matched);
    char finding[IC_FINDING_ID_MAX];
    if (rc >= 0 && ic_findings_case_finding(c, finding, sizeof(finding)) > 0 &&
        !cJSON_AddStringToObject(c, "finding", finding))
        rc = IC_ENOMEM;
    if (rc < 0) {
        cJSON_Delete(c);
        return rc;
    }
    *ret = c;
    return 0;
}

static const cJSON *ic_plan_cases_next(struct ic_cases *self)
{
    struct ic_plan_cases *source = (struct ic_plan_cases *)self;
    cJSON_Delete(source->current);
    source->current = NULL;
    if (self->status < 0)
        return NULL;
    while (source->at < source->plan->count && !source->plan->items[source->at].done)
        source->at++;
    if (source->at >= source->plan->count)
        return NULL;
    int rc = ic_plan_cases_make(source, source->at++, &source->current);
    if (rc < 0)
        self->status = rc;
    return source->current;
}

static const cJSON *ic_plan_cases_first(struct ic_cases *self)
{
    struct ic_plan_cases *source = (struct ic_plan_cases *)self;
    source->at = 0;
    self->status = 0;
    return ic_plan_cases_next(self);
}

int ic_plan_cases_open(struct ic_plan_cases *source, const struct ic_plan *plan,
                       const struct ic_catalog *catalog, const struct ic_expectations *expectations,
                       const char *stream_path)
{
    memset(source, 0, sizeof(*source));
    if (stream_path)
        snprintf(source->stream_path, sizeof(source->stream_path), "%s", stream_path);
    size_t entries = ic_expect_count(expectations);
    source->scratch = malloc(sizeof(*source->scratch));
    source->matched = calloc(entries ? entries : 1, sizeof(bool));
    if (!source->scratch || !source->matched) {
        free(source->scratch);
        free(source->matched);
        return IC_ENOMEM;
    }
    source->base.first = ic_plan_cases_first;
    source->base.next = ic_plan_cases_next;
    for (size_t i = 0; i < plan->count; i++)
        source->base.count += plan->items[i].done;
    source->plan = plan;
    source->catalog = catalog;
    source->expectations = expectations;
    return 0;
}

void ic_plan_cases_close(struct ic_plan_cases *source)
{
    cJSON_Delete(source->current);
    if (source->stream)
        fclose(source->stream);
    free(source->line);
    free(source->scratch);
    free(source->matched);
    memset(source, 0, sizeof(*source));
}
