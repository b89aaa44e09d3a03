/*
 * ic_stream: the record stage. A JSON-Lines stream of results, written as cases finish.
 *
 * Contract
 * - The stream starts with a {"type":"run",...} line that holds the run's facts and, under
 *   "report", the report as it would be without its cases (tool, environment, summary cells);
 *   then one {"type":"case",...} line per finished case; and {"type":"end"} when the run
 *   completes. Each line is flushed when written, so a run that is killed keeps every result
 *   it had, and the stream alone is enough to rebuild the report (ic_stream_load) or resume.
 *   The exception is a batch written under ic_stream_hold (the cases the plan decides, which
 *   a resumed run decides again): flushed once, when the hold is released.
 * - Case objects have the same form here and in the JSON matrix (ic_case_to_json); a case's
 *   line is that object's text as cJSON prints it, written straight (ic_case_json_text).
 * - The recorder owns its FILE, opened close-on-exec, and its line buffer; ic_stream_close
 *   closes and frees them (also after an error).
 * - Reading a stream back into a report is the report stage's (ic_report_read).
 */
#ifndef IC_STREAM_H
#define IC_STREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ic_case.h"
#include "ic_result.h"
#include "ic_text.h"

struct ic_stream {
    FILE *file;
    char path[1024];
    bool held; /* lines wait in the FILE's buffer until ic_stream_hold(rec, false) */
    int64_t written; /* bytes written so far: where the next line starts, without asking the
                      * file (ftello costs a system call a case) */
    struct ic_text_buf line; /* a case's line, reused from case to case (ic_stream_close frees) */
};


/* `skeleton`: the report without cases (NULL: none, and the stream cannot be read back). */
int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info,
                   const cJSON *skeleton);
/* Writes the case's line and sets *ret_offset to where it starts in the file (never 0: the
 * run line is first), for ic_stream_read_case. */
int ic_stream_write_case(struct ic_stream *rec, const struct ic_case *c,
                         const struct ic_result *res, int64_t *ret_offset);

/* Reads back the case whose line starts at `offset` of a stream open for reading: the object
 * ic_case_to_json made (*ret, the caller's). `line` and `size` are a getline buffer the caller
 * keeps between calls and frees. IC_EIO when the file cannot be read, IC_EPROTO when no case
 * line starts there. */
int ic_stream_read_case(FILE *file, int64_t offset, char **line, size_t *size, cJSON **ret);
/* A spool: an anonymous temporary file (gone once closed) that takes case lines with
 * ic_stream_write_case, without the run line and unflushed, for results made before the
 * stream they belong to can be opened (the cases run while discovery imports). */
int ic_stream_open_spool(struct ic_stream *rec);

/* Copies the line of `len` bytes at `offset` of `spool` (where ic_stream_write_case put it;
 * `len` up to the next line's offset) to the end of `rec` as it is, and sets *ret_offset to
 * where it starts there. IC_EIO when either file fails, IC_ENOMEM. */
int ic_stream_copy_line(struct ic_stream *rec, struct ic_stream *spool, int64_t offset,
                        size_t len, int64_t *ret_offset);

/* Holds the flushing of case lines (true), or flushes what was held and flushes each line
 * again (false). IC_EIO when the flush fails. */
int ic_stream_hold(struct ic_stream *rec, bool hold);

int ic_stream_close(struct ic_stream *rec, bool complete);

#endif
