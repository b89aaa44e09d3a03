#include "ic_plan_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_stream.h"
#include "ic_text.h"

/* The stream printed the "type" member last (ic_stream_write_case): the line read is the
 * case's text with it, which ends the line with this. */
static const char ic_stream_type_tail[] = ",\"type\":\"case\"}";

/* Keeps the text of the case just read in its line, cut before the "type" member and closed
 * again: what printing the object read would make of it, since cJSON prints every value it
 * parsed from its own printing the same way. A line of another form keeps no text. */
static void ic_plan_cases_keep_text(struct ic_plan_cases *source)
{
    size_t len = strlen(source->line), tail = sizeof(ic_stream_type_tail) - 1;
    while (len > 0 && (source->line[len - 1] == '\n' || source->line[len - 1] == '\r'))
        len--;
    if (len <= tail || memcmp(source->line + len - tail, ic_stream_type_tail, tail) != 0)
        return;
    len -= tail;
    source->line[len++] = '}';
    source->line[len] = '\0';
    source->text = source->line;
    source->text_len = len;
}

/* The text of the case the plan decided, in `made`: what printing ic_case_to_json's object
 * makes of it (ic_case_json_text), at a fraction of the cost; 128 000 of --all's 196 000 cases
 * are written this way. False when it cannot be made (the object is printed instead). */
static bool ic_plan_cases_make_text(struct ic_plan_cases *source, const struct ic_planned *item)
{
    ic_text_buf_truncate(&source->made, 0);
    source->made.status = 0;
    /* The scratch result still holds the case's (ic_plan_cases_make): nothing else is made
     * before the next case. */
    if (ic_case_json_text(&item->c, source->scratch, &source->made) < 0 || source->made.status)
        return false;
    source->text = source->made.data;
    source->text_len = source->made.len;
    return true;
}

/* Adds the case's "finding" member to its text (ic_text_json_add_member), in `made`: a
 * line's buffer has no room to spare. False when it cannot (the object is printed instead). */
static bool ic_plan_cases_add_finding(struct ic_plan_cases *source)
{
    if (source->text != source->made.data) {
        ic_text_buf_truncate(&source->made, 0);
        source->made.status = 0;
        ic_text_buf_add(&source->made, source->text, source->text_len);
    }
    if (ic_text_json_add_member(&source->made, "finding", source->finding) < 0)
        return false;
    source->text = source->made.data;
    source->text_len = source->made.len;
    source->finding[0] = '\0';
    return true;
}

/* The case line of `item` in the stream; IC_EPROTO when the line there is another case's. */
static int ic_plan_cases_read(struct ic_plan_cases *source, const struct ic_planned *item,
                              cJSON **ret)
{
    if (!source->stream && source->stream_path[0])
        source->stream = ic_file_private(fopen(source->stream_path, "re"));
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
    ic_plan_cases_keep_text(source);
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
        rc = ic_plan_result_again(source->catalog, item, source->scratch, &source->scratch_holds);
        c = rc == 0 ? ic_case_to_json(&item->c, source->scratch) : NULL;
        if (rc == 0 && !c)
            rc = IC_ENOMEM;
        source->text_to_make = item;
    }
    if (rc == 0 && source->expectations)
        rc = ic_expect_apply_case(source->expectations, c, source->matched);
    if (rc != 0) { /* changed by an expectation (or failed) */
        source->text = NULL;
        source->text_to_make = NULL;
    }
    char finding[IC_FINDING_ID_MAX];
    if (rc >= 0 && ic_findings_case_finding(c, finding, sizeof(finding)) > 0) {
        if (!cJSON_AddStringToObject(c, "finding", finding))
            rc = IC_ENOMEM;
        snprintf(source->finding, sizeof(source->finding), "%s", finding);
    }
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
    source->text = NULL;
    source->text_len = 0;
    source->text_to_make = NULL;
    source->finding[0] = '\0';
    if (self->status < 0)
        return NULL;
    while (source->at < source->plan->count && !source->plan->items[source->at].done)
        source->at++;
    if (source->at >= source->plan->count)
        return NULL;
    /* The case is made in an arena span (ic_json.h), and lives until this source's next call,
     * which deletes it before the thread's next span: what its readers add to it, or copy of
     * it, comes from malloc. Two passes read the cases at once, each in a thread of its own,
     * each with its own arena. */
    ic_json_arena_begin();
    int rc = ic_plan_cases_make(source, source->at++, &source->current);
    ic_json_arena_end();
    if (rc < 0)
        self->status = rc;
    return source->current;
}

static const char *ic_plan_cases_text(struct ic_cases *self, size_t *ret_len)
{
    struct ic_plan_cases *source = (struct ic_plan_cases *)self;
    if (source->current && source->text_to_make) {
        if (!ic_plan_cases_make_text(source, source->text_to_make))
            source->text = NULL;
        source->text_to_make = NULL;
    }
    if (source->text && source->finding[0] && !ic_plan_cases_add_finding(source))
        source->text = NULL;
    *ret_len = source->text ? source->text_len : 0;
    return source->current ? source->text : NULL;
}

cJSON *ic_plan_cases_take(struct ic_plan_cases *source)
{
    cJSON *taken = source->current;
    source->current = NULL;
    return taken;
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
    ic_text_buf_init(&source->made);
    source->base.first = ic_plan_cases_first;
    source->base.next = ic_plan_cases_next;
    source->base.text = ic_plan_cases_text;
    for (size_t i = 0; i < plan->count; i++)
        source->base.count += plan->items[i].done;
    source->scratch_holds = IC_PLAN_MADE_NONE;
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
    ic_text_buf_release(&source->made);
    free(source->scratch);
    free(source->matched);
    memset(source, 0, sizeof(*source));
}
