/*
 * ic_stream: the record stage. A JSON-Lines stream of results, written as cases finish.
 *
 * Contract
 * - The stream starts with a {"type":"run",...} line, has one {"type":"case",...} line per
 *   finished case, and ends with {"type":"end"} when the run completes. Each line is flushed
 *   when written, so a run that is killed keeps every result it had.
 * - Case objects have the same form here and in the JSON matrix (ic_case_to_json).
 * - The recorder owns its FILE; ic_stream_close closes it (also after an error).
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

int ic_stream_open(struct ic_stream *rec, const char *path, const cJSON *run_info);
int ic_stream_write_case(struct ic_stream *rec, const struct ic_case *c,
                           const struct ic_result *res);
int ic_stream_close(struct ic_stream *rec, bool complete);

#endif
