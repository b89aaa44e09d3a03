/*
 * ic_result: what a case ends as. Outcomes, the checks behind them, and their JSON form.
 *
 * Contract
 * - Outcomes (IC_OUTCOME_LIST) are the conformance vocabulary: pass; fail (the library broke
 *   a rule, which the result names); unsupported (a refusal the spec allows, with its
 *   reason); crash and timeout (the worker died or hung in this case); error (the tool's or
 *   the environment's fault, never charged to a library); and xfail, xpass, waived, which
 *   expectations files give. Names are the report spelling and never change.
 * - Each case records every check on its own (IC_CHECK_LIST) as pass, fail or skip with a
 *   note, so a report shows which property broke, not only that something did. A failed
 *   check names the rule (ic_rules.h), the side that broke it and the severity class.
 * - A case fails through its checks: ic_result_conclude makes the most severe failed check
 *   (then the first in check order) the case's rule, side, severity and diagnostic. Only a
 *   crash or a timeout is set directly, with the rule and side the supervisor worked out.
 * - Results are plain values. The JSON functions allocate cJSON trees the caller owns
 *   (cJSON_Delete); they return NULL only when memory runs out.
 */
#ifndef IC_RESULT_H
#define IC_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_diag.h"
#include "ic_rules.h"

/* Every fact about an outcome, in one table that every writer reads (diff, JUnit, Markdown,
 * the terminal, and the dashboard through the data the HTML writer embeds):
 * X(ENUM, name, failing, passed, junit, category, mark, label, rank, badness)
 *   failing   counts as a failure of the run (exit status 1, unless expectations say otherwise)
 *   passed    counts among a cell's passed cases, the "passed" of "passed/total"
 *   junit     the element a JUnit testcase holds for it ("" for none: the case passed)
 *   category  the colour of a cell whose most severe outcome it is (dashboard, Markdown)
 *   mark      the symbol that says the same for readers who do not see colour (UTF-8)
 *   label     its name where a cell has little room
 *   rank      the display order, most severe first: a cell lists its cases in this order
 *   badness   what `diff` compares: a case whose badness rose regressed (0 passes, 1 an allowed
 *             refusal, 2 a finding or an error, 3 the worker died or hung) */
#define IC_OUTCOME_LIST(X)                                                                         \
    X(PASS, "pass", false, true, "", "pass", "\u2713", "pass", 8, 0)                               \
    X(FAIL, "fail", true, false, "failure", "fail", "\u2717", "fail", 2, 2)                        \
    X(UNSUPPORTED, "unsupported", false, false, "skipped", "unsup", "\u2013", "unsup.", 7, 1)      \
    X(CRASH, "crash", true, false, "error", "fail", "\u2717", "crash", 0, 3)                       \
    X(TIMEOUT, "timeout", true, false, "error", "fail", "\u2717", "timeout", 1, 3)                 \
    X(ERROR, "error", false, false, "error", "error", "!", "error", 3, 2)                          \
    X(XFAIL, "xfail", false, false, "skipped", "xfail", "\u2248", "xfail", 6, 2)                   \
    X(XPASS, "xpass", false, true, "", "xpass", "+", "xpass", 4, 0)                                \
    X(WAIVED, "waived", false, false, "skipped", "xfail", "\u2248", "waived", 5, 2)

enum ic_outcome {
#define IC_OUTCOME_ENUM(e, name, failing, passed, junit, category, mark, label, rank, badness)     \
    IC_OUTCOME_##e,
    IC_OUTCOME_LIST(IC_OUTCOME_ENUM)
#undef IC_OUTCOME_ENUM
        IC_OUTCOME_COUNT
};

/* X(ENUM, name, what it verifies) */
#define IC_CHECK_LIST(X)                                                                           \
    X(EXPORT, "export", "the export object is valid by the protocol's rules")                      \
    X(IMPORT, "import",                                                                            \
      "the consumer asks as the protocol says, and imports what it is given "                      \
      "or refuses it as allowed")                                                                  \
    X(ZERO_COPY, "zero_copy", "the first element is the producer's where the path promises it")    \
    X(CONTENTS, "contents", "every element equals the seeded pattern, read through the strides")   \
    X(DTYPE, "dtype", "the element type survives")                                                 \
    X(SHAPE, "shape", "the shape survives")                                                        \
    X(STRIDES, "strides", "every element is at the same address on both sides")                    \
    X(DEVICE, "device", "the device survives")                                                     \
    X(READONLY, "readonly", "a read-only array stays read-only")                                   \
    X(COMPUTE, "compute",                                                                          \
      "the consumer's own operation on its import gives the values the pattern predicts")          \
    X(WRITE_THROUGH, "write_through",                                                              \
      "where memory is shared, a write through either side is read through the other")             \
    X(RELAY, "relay",                                                                              \
      "a consumer that hands its import on over another protocol keeps its values, dtype and "     \
      "shape")                                                                                     \
    X(LIFETIME, "lifetime", "deleters run exactly once; buffers are released once per get")

enum ic_check {
#define IC_CHECK_ENUM(e, name, summary) IC_CHECK_##e,
    IC_CHECK_LIST(IC_CHECK_ENUM)
#undef IC_CHECK_ENUM
        IC_CHECK_COUNT
};

/* A check's status: X(ENUM, name). */
#define IC_CHECK_STATUS_LIST(X)                                                                    \
    X(NOT_RUN, "not_run") X(PASS, "pass") X(FAIL, "fail") X(SKIP, "skip")

enum ic_check_status {
#define IC_CHECK_STATUS_ENUM(e, name) IC_CHECK_##e,
    IC_CHECK_STATUS_LIST(IC_CHECK_STATUS_ENUM)
#undef IC_CHECK_STATUS_ENUM
        IC_CHECK_STATUS_COUNT
};

/* Where a case's time goes, in the order its stages run (ic_exchange_run): the one table of
 * them. X(ENUM, name, what). Only the worker measures them; a report keeps their sums over the
 * run (run.timing.stages_s), not each case's. */
#define IC_STAGE_LIST(X)                                                                           \
    X(BUILD, "build", "the producer's array built from the pattern and described")                 \
    X(EXPORT, "export", "the producer's export object, and the proxy that watches it")             \
    X(IMPORT, "import", "the consumer's import call: the bare exchange, through the proxy")        \
    X(DESCRIBE, "describe", "the consumer's description of its import")                            \
    X(CHECKS, "checks", "interopcheck's checks in C: export, contents, metadata, attribution")     \
    X(COMPUTE, "compute", "the consumer's operation on its import, and its description")           \
    X(WRITE_THROUGH, "write_through", "a write through the import, read back on both sides")       \
    X(RELAY, "relay", "the import handed on over another protocol and read back")                  \
    X(LIFETIME, "lifetime", "letting go: collections, deleter counts, the owner's release")

enum ic_stage {
#define IC_STAGE_ENUM(e, name, what) IC_STAGE_##e,
    IC_STAGE_LIST(IC_STAGE_ENUM)
#undef IC_STAGE_ENUM
        IC_STAGE_COUNT
};

const char *ic_stage_name(enum ic_stage stage);

#define IC_NOTE_MAX       400
#define IC_DIAGNOSTIC_MAX 1200
#define IC_DOCUMENTED_MAX 240

struct ic_check_result {
    enum ic_check_status status;
    enum ic_rule rule;               /* the broken rule, for a fail */
    enum ic_side side;               /* who broke it, for a fail */
    enum ic_severity_class severity; /* the rule's class, or documented */
    char note[IC_NOTE_MAX];          /* why it failed or was skipped, or a remark on a pass */
};

struct ic_result {
    enum ic_outcome outcome;
    /* For fail, crash and timeout: the rule, who broke it, and how bad that is. */
    enum ic_rule rule;
    enum ic_side side;
    enum ic_severity_class severity;
    char documented[IC_DOCUMENTED_MAX]; /* the library's documentation of the deviation */
    char diagnostic[IC_DIAGNOSTIC_MAX]; /* one or two sentences a person can act on */
    char request[160];                  /* what the consumer asked the producer for */
    char exported[160];                 /* what the producer exported */
    double duration_ms;
    /* duration_ms by stage (the worker's measure; not in the result's JSON or packed form) */
    double stage_ms[IC_STAGE_COUNT];
    struct ic_check_result checks[IC_CHECK_COUNT];
};

/* A finished result as a run keeps it, one per case of its plan: the outcome and its
 * attribution as fields (what counting and expectations read), the rest (duration, checks,
 * every text) packed in one allocation that holds only the bytes the texts use. A struct
 * ic_result is 7 KB whatever it says; a packed one is its texts' length and ~100 bytes, so a
 * plan of 200 000 cases holds tens of megabytes instead of gigabytes.
 * Zeroed, it is an empty result (outcome pass, no checks run, no texts). The blob is the
 * packed form's own (ic_result_packed_release). */
struct ic_result_packed {
    enum ic_outcome outcome;
    enum ic_rule rule;
    enum ic_side side;
    enum ic_severity_class severity;
    unsigned char *blob;
};

/* Packs `res` into *ret, releasing what *ret held. IC_ENOMEM leaves *ret as it was. */
int ic_result_pack(const struct ic_result *res, struct ic_result_packed *ret);

/* The result that was packed (the outcome and attribution as the packed form's fields say,
 * which expectations may have changed since). */
void ic_result_unpack(const struct ic_result_packed *packed, struct ic_result *ret);

void ic_result_packed_release(struct ic_result_packed *packed);

const char *ic_outcome_name(enum ic_outcome outcome);
int ic_outcome_from_name(const char *name, enum ic_outcome *ret);
bool ic_outcome_is_failure(enum ic_outcome outcome);

struct ic_outcome_info {
    const char *name;
    bool failing, passed;
    const char *junit, *category, *mark, *label;
    int rank, badness;
};

/* The row of IC_OUTCOME_LIST; NULL for a value outside the table. */
const struct ic_outcome_info *ic_outcome_info(enum ic_outcome outcome);

/* The most severe outcome (lowest rank) with a count, or -1 when every count is 0. */
int ic_outcome_worst(const size_t counts[IC_OUTCOME_COUNT]);

/* The sum of the counts of the outcomes that are failures of the run. */
size_t ic_outcome_failures(const size_t counts[IC_OUTCOME_COUNT]);

const char *ic_check_name(enum ic_check check);
const char *ic_check_summary(enum ic_check check);
const char *ic_check_status_name(enum ic_check_status status);

/* Sets a check that passed or was skipped; the note is printf-formatted and may be NULL. */
void ic_result_check(struct ic_result *res, enum ic_check check, enum ic_check_status status,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Fails a check: `rule` was broken by `side` (IC_SIDE_NONE: the rule's own side). The
 * severity is the rule's class. */
void ic_result_fail(struct ic_result *res, enum ic_check check, enum ic_rule rule,
                    enum ic_side side, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Ends a case with an outcome that is not a library's failure (pass, unsupported, error) and
 * a printf-formatted diagnostic. */
void ic_result_set(struct ic_result *res, enum ic_outcome outcome, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Ends a case as crash or timeout: the rule and the side worked out from what was seen. */
void ic_result_set_fault(struct ic_result *res, enum ic_outcome outcome, enum ic_rule rule,
                         enum ic_side side, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Derives the outcome from the checks: the most severe failed check (then the first in
 * check order) makes it a fail with that check's rule, side, severity and note; otherwise a
 * pass. */
void ic_result_conclude(struct ic_result *res);

/* The failed check that ic_result_conclude makes the case's, or -1 when none failed. */
int ic_result_primary_check(const struct ic_result *res);

/* Room for any text ic_number_text writes ("%1.17g" of a double, with its '\0'). */
#define IC_NUMBER_TEXT_MAX 32

/* `d` as cJSON 1.7 prints a number: 15 significant digits, or 17 where 15 do not read back as
 * the same double; 0 for -0 (as cJSON 1.7.16 and later do); null for NaN and the infinities.
 * A whole number of thousandths (a duration in ms, rounded to microseconds) takes no printf. */
void ic_number_text(double d, char text[IC_NUMBER_TEXT_MAX]);

/* The JSON object of a result (outcome, rule, diagnostic, request, exported, ms, checks). */
cJSON *ic_result_to_json(const struct ic_result *res);

/* Reads what ic_result_to_json wrote. IC_EPROTO when the object is malformed. */
int ic_result_from_json(const cJSON *json, struct ic_result *ret);

struct ic_case;

/* The library a failure of case `c` is charged to: its producer or consumer by the result's
 * side, else both, written "producer+consumer" into buf (one name when they are the same). */
const char *ic_result_culprit(const struct ic_case *c, const struct ic_result *res, char *buf,
                              size_t size);

/* The JSON object of one case with its result: id, the dimensions, the result, and the
 * library its failure is charged to. The same form in the stream and the report. */
cJSON *ic_case_to_json(const struct ic_case *c, const struct ic_result *res);

struct ic_text_buf;

/* Appends to `out` the text cJSON_PrintUnformatted makes of ic_case_to_json(c, res), byte for
 * byte, without making the object: the stream writes a line a case, 196 000 of them on --all,
 * most as the plan decides them, on the way to the run's first case. IC_ENOMEM (the buffer's
 * status) when it cannot grow; IC_EINVAL for a case without a valid id. */
int ic_case_json_text(const struct ic_case *c, const struct ic_result *res,
                      struct ic_text_buf *out);

/* Appends to `out` the text cJSON_PrintUnformatted makes of ic_result_to_json(res), byte for
 * byte, without making the object: a worker sends each case's result so. The buffer's status
 * (IC_ENOMEM when it cannot grow). */
int ic_result_json_text(const struct ic_result *res, struct ic_text_buf *out);

/* Appends `s` as a JSON string, escaped as cJSON prints one: the two-character escapes, \u00XX
 * for the other control characters, every other byte as it is. The buffer's status says
 * whether it could grow. */
void ic_text_json_string(struct ic_text_buf *out, const char *s);

/* Adds "key":"value" as the last member of the object whose text `object` holds, where
 * cJSON_AddStringToObject puts it and printing the object writes it (the value as it is, the
 * key one of the caller's own, with nothing to escape). IC_EINVAL (the text unchanged) when
 * the text is not an object's; otherwise the buffer's status. */
int ic_text_json_add_member(struct ic_text_buf *object, const char *key, const char *value);

#endif
