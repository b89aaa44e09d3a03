/*
 * ic_report: the report stage. The JSON matrix of a run (schema: reports/schema/), written
 * atomically.
 *
 * Contract
 * - The report holds the tool and build facts, the run's settings, the environment (platform,
 *   Python, every library's version or import error), every case of the plan with its
 *   outcome and checks, and a summary per protocol: producer x consumer outcome counts, and
 *   for each cell without cases the reason (one side lacks the protocol or the library).
 * - Pointers and 64-bit integers are strings; counts and durations are JSON numbers.
 * - ic_json_write_atomic writes to a temporary file next to the target and renames it over
 *   the target, so a reader never sees half a report. It streams: a top-level array (the
 *   cases) is written an element a line, so the text is never whole in memory.
 */
#ifndef IC_REPORT_H
#define IC_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"
#include "ic_catalog.h"
#include "ic_plan.h"

#define IC_REPORT_SCHEMA_VERSION 2

/* Which device kinds cases can run on, and why (or why not), one sentence each. */
struct ic_devices {
    uint32_t available; /* bit (1 << ic_device_kind) */
    char detail[IC_KIND_COUNT][400];
};

/* The environment's "devices" object, also used by `interopcheck list --json`. */
cJSON *ic_report_devices(const struct ic_devices *devices);

/* The report without its cases: everything but the cases, and an empty "cases" array where
 * they go. `tool` and `run` are objects made by the caller and copied in; `python` describes
 * the interpreter. The summary counts the plan's finished cases as observed (expectations
 * recount it). It is the first line of a result stream, which then holds the cases a line
 * each, and the report a run writes with its cases from a source (ic_report_write_atomic).
 * NULL when memory runs out. */
cJSON *ic_report_skeleton(const cJSON *tool, const cJSON *run, const cJSON *python,
                          const struct ic_catalog *catalog, const struct ic_plan *plan,
                          const struct ic_devices *devices);

/* The environment's "libraries" array, also used by `interopcheck list --json`. */
cJSON *ic_report_libraries(const struct ic_catalog *catalog);

/* Counts of each outcome in `plan`. */
void ic_report_count(const struct ic_plan *plan, size_t counts[IC_OUTCOME_COUNT]);

int ic_json_write_atomic(const char *path, const cJSON *json, char *err, size_t err_size);

/* Writes `report` as ic_json_write_atomic would if its "cases" array held the cases of
 * `cases`: the report's own "cases" member is only the place they go (one pass over the
 * source, a case a line, so the cases are never all in memory). */
int ic_report_write_atomic(const char *path, const cJSON *report, struct ic_cases *cases, char *err,
                           size_t err_size);

/* The same, showing each case to `on_case` once it is written, so that other writers fill
 * themselves in the same pass (a run's findings and dashboard), and calling `after_cases` once
 * the "cases" member is whole, before the members that follow it are written: it may add
 * members at the end of the report (a run's findings). Its failure (IC_E*) fails the write.
 * When the write returns 0, on_case saw every case of one whole pass, in order; otherwise it
 * may have seen part of one. */
struct ic_report_observer {
    void (*on_case)(void *context, const cJSON *c);
    int (*after_cases)(void *context);
    void *context;
};
int ic_report_write_atomic_observed(const char *path, const cJSON *report, struct ic_cases *cases,
                                    const struct ic_report_observer *observer, char *err,
                                    size_t err_size);

/* Reads a report a run wrote (ic_report_write_atomic) or merge made: parses it and checks
 * that it is an interopcheck report of a schema version this build reads. On failure err says what
 * is wrong with the file and nothing is returned. The caller deletes the tree.
 * - Strict JSON: a NUL byte, a syntax error or anything after the value is refused, naming
 *   the line and column (from 1; the column in characters).
 * - "schema_version" must be a number whose value is IC_REPORT_SCHEMA_VERSION: a string, a
 *   boolean, a fraction (1.5) or another integer is refused, saying which. 2.0 is the number 2
 *   (JSON numbers are values, and the schema's "const": 2 accepts it), so it is read.
 * - The file's text is treated as library text: every string is repaired to UTF-8 and capped
 *   at IC_TEXT_FIELD_CAP bytes, a finding's reproducer at IC_TEXT_SCRIPT_CAP; a longer
 *   reproducer is dropped, and its reproducer_error says why. */
int ic_report_load(const char *path, cJSON **ret, char *err, size_t err_size);

/* Opens `path` for reading, for the readers of files users hand over (reports, streams,
 * expectations): gzip data are read gunzipped, whatever the name, anything else as it is.
 * `mode` is kept for the callers' spelling ("r", "rb", "re"): reading is all it does. NULL
 * with "cannot read <what><path>: <reason>" in err. */
FILE *ic_report_open(const char *path, const char *mode, const char *what, char *err,
                     size_t err_size);

/* Recounts every outcome count of the report's summary (totals, per protocol, per cell) from
 * its cases, after their outcomes changed (expectations). Gaps are kept as they are. */
int ic_report_recount(cJSON *report);

/* The same from the cases of a source (the report's own "cases" member is not read). */
int ic_report_recount_from(cJSON *report, struct ic_cases *cases);

/* Holds a report read from a file to what a run writes: valid UTF-8, every string capped
 * (IC_TEXT_FIELD_CAP; reproducers IC_TEXT_SCRIPT_CAP, a longer one dropped with the reason).
 * IC_ENOMEM. */
int ic_report_hold_text(cJSON *report);

/* A report rebuilt from the result stream at `path` (the caller deletes it), with or without
 * its end line: the report says "interrupted": true when the end line is missing. A last line
 * without its newline (a run killed while writing it) is left out; any other line that is not
 * a stream line is an error naming its line number. The findings are attached; reproducers
 * are not (they need workers). IC_EIO, IC_EINVAL with the reason in `err`. */
int ic_stream_load(const char *path, cJSON **ret, char *err, size_t err_size);

/* True for a path named like a stream (".jsonl"). */
bool ic_stream_is_path(const char *path);

/* A report from a JSON report or a stream, by the path's name. */
int ic_report_read(const char *path, cJSON **ret, char *err, size_t err_size);

#endif
