#include "ic_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_json.h"

/* Writes `text` and a newline, flushed unless held. */
static int ic_stream_put(struct ic_stream *rec, const char *text, size_t len)
{
    bool wrote = fwrite(text, 1, len, rec->file) == len && putc('\n', rec->file) != EOF;
    if (wrote)
        rec->written += (int64_t)len + 1;
    return !wrote || (!rec->held && fflush(rec->file) != 0) ? IC_EIO : 0;
}

static int ic_stream_line(struct ic_stream *rec, const cJSON *json)
{
    size_t len;
    const char *text = ic_json_print(json, false, &len);
    return text ? ic_stream_put(rec, text, len) : IC_ENOMEM;
}

int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info,
                   const cJSON *skeleton)
{
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->path, sizeof(rec->path), "%s", path);
    /* An earlier run's stream is removed, not truncated: ext4 writes a file that was truncated
     * to nothing back to disk when it is closed again (its auto_da_alloc), which held the close
     * of --all's 117 MB stream for 70 ms with nothing else to do. Only a regular file can be
     * there (ic_output_check refuses the rest), and only one this process may write is
     * removed: one it may not is refused by fopen, as before; where it cannot be removed,
     * fopen truncates it. */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, W_OK) == 0)
        (void)unlink(path);
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
                         const struct ic_result *res, int64_t *ret_offset)
{
    *ret_offset = rec->written;
    /* The object's text written straight (ic_case_json_text), "type" last, as the printing of
     * ic_case_to_json's object with that member added would have it: a line costs no tree. */
    ic_text_buf_truncate(&rec->line, 0);
    int rc = ic_case_json_text(c, res, &rec->line);
    if (rc < 0)
        return rc;
    rc = ic_text_json_add_member(&rec->line, "type", "case");
    return rc < 0 ? rc : ic_stream_put(rec, rec->line.data, rec->line.len);
}

int ic_stream_open_spool(struct ic_stream *rec)
{
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->path, sizeof(rec->path), "(a temporary file)");
    rec->file = tmpfile();
    rec->held = true;
    return rec->file ? 0 : IC_EIO;
}

int ic_stream_copy_line(struct ic_stream *rec, struct ic_stream *spool, int64_t offset,
                        size_t len, int64_t *ret_offset)
{
    /* Written under a hold: what the spool's buffer holds reaches its file first. */
    if (fflush(spool->file) != 0)
        return IC_EIO;
    char *line = malloc(len ? len : 1);
    if (!line)
        return IC_ENOMEM;
    int rc = pread(fileno(spool->file), line, len, (off_t)offset) == (ssize_t)len &&
                     fwrite(line, 1, len, rec->file) == len &&
                     (rec->held || fflush(rec->file) == 0)
                 ? 0
                 : IC_EIO;
    free(line);
    if (rc == 0) {
        *ret_offset = rec->written;
        rec->written += (int64_t)len;
    }
    return rc;
}

int ic_stream_hold(struct ic_stream *rec, bool hold)
{
    rec->held = hold;
    return !hold && rec->file && fflush(rec->file) != 0 ? IC_EIO : 0;
}

int ic_stream_close(struct ic_stream *rec, bool complete)
{
    int rc = 0;
    ic_text_buf_release(&rec->line);
    if (!rec->file)
        return 0;
    if (complete)
        rc = fprintf(rec->file, "{\"type\":\"end\"}\n") < 0 ? IC_EIO : 0;
    if (fclose(rec->file) != 0)
        rc = IC_EIO;
    rec->file = NULL;
    return rc;
}

int ic_stream_read_case(FILE *file, int64_t offset, char **line, size_t *size, cJSON **ret)
{
    *ret = NULL;
    if (fseeko(file, (off_t)offset, SEEK_SET) != 0)
        return IC_EIO;
    ssize_t len = getline(line, size, file);
    if (len < 0)
        return ferror(file) ? IC_EIO : IC_EPROTO;
    cJSON *json = cJSON_ParseWithLength(*line, (size_t)len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "type"));
    if (!json || !type || strcmp(type, "case") != 0) {
        cJSON_Delete(json);
        return IC_EPROTO;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(json,
                                            "type"); /* the last member: ic_stream_write_case */
    *ret = json;
    return 0;
}
