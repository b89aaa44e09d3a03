/*
 * ic_stream: the record stage. A JSON-Lines stream of results, written as cases finish.
 *
 * Contract
 * - The stream starts with a {"type":"run",...} line that holds the run's facts and, under
 *   "report", the report as it would be without its cases (tool, environment, summary cells);
 *   then one {"type":"case",...} line per finished case; and {"type":"end"} when the run
 *   completes. Each line is flushed when written, so a run that is killed keeps every result
 *   it had, and the stream alone is enough to rebuild the report (ic_stream_load) or resume.
 * - Case objects have the same form here and in the JSON matrix (ic_case_to_json).
 * - The recorder owns its FILE, opened close-on-exec; ic_stream_close closes it (also after
 *   an error).
 * - ic_stream_load rebuilds a report from a stream, with or without its end line; the report
 *   says "interrupted": true when the end line is missing. A last line without its newline
 *   (a run killed while writing it) is left out; any other line that is not a stream line is
 *   an error naming its line number. ic_report_read reads either form by the file's name.
 */
#ifndef IC_STREAM_H
#define IC_STREAM_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "ic_case.h"
#include "ic_result.h"

struct ic_stream {
    FILE *file;
    char path[1024];
};

/* The JSON object of one case with its result: id, the dimensions, then the result. */
cJSON *ic_case_to_json(const struct ic_case *c, const struct ic_result *res);

/* `skeleton`: the report without cases (NULL: none, and the stream cannot be read back). */
int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info,
                   const cJSON *skeleton);
int ic_stream_write_case(struct ic_stream *rec, const struct ic_case *c,
                           const struct ic_result *res);
int ic_stream_close(struct ic_stream *rec, bool complete);

/* A report rebuilt from the stream at `path` (the caller deletes it). IC_EIO, IC_EINVAL with
 * the reason in `err`. */
int ic_stream_load(const char *path, cJSON **ret, char *err, size_t err_size);

/* True for a path named like a stream (".jsonl"). */
bool ic_stream_is_path(const char *path);

/* A report from a JSON report or a stream, by the path's name. */
int ic_report_read(const char *path, cJSON **ret, char *err, size_t err_size);

#endif
