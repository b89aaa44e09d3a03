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

#include <cjson/cJSON.h>

#include "ic_diag.h"
#include "ic_rules.h"

/* X(ENUM, name, counts as a failure of the run) */
#define IC_OUTCOME_LIST(X)                                                                         \
    X(PASS, "pass", false)                                                                         \
    X(FAIL, "fail", true)                                                                          \
    X(UNSUPPORTED, "unsupported", false)                                                           \
    X(CRASH, "crash", true)                                                                        \
    X(TIMEOUT, "timeout", true)                                                                    \
    X(ERROR, "error", false)                                                                       \
    X(XFAIL, "xfail", false)                                                                       \
    X(XPASS, "xpass", false)                                                                       \
    X(WAIVED, "waived", false)

enum ic_outcome {
#define IC_OUTCOME_ENUM(e, name, failing) IC_OUTCOME_##e,
    IC_OUTCOME_LIST(IC_OUTCOME_ENUM)
#undef IC_OUTCOME_ENUM
        IC_OUTCOME_COUNT
};

/* X(ENUM, name, what it verifies) */
#define IC_CHECK_LIST(X)                                                                           \
    X(EXPORT, "export", "the export object is valid by the protocol's rules")                     \
    X(IMPORT, "import", "the consumer asks as the protocol says, and imports what it is given "    \
                        "or refuses it as allowed")                                                \
    X(ZERO_COPY, "zero_copy", "the first element is the producer's where the path promises it")   \
    X(CONTENTS, "contents", "every element equals the seeded pattern, read through the strides")  \
    X(DTYPE, "dtype", "the element type survives")                                                 \
    X(SHAPE, "shape", "the shape survives")                                                        \
    X(STRIDES, "strides", "every element is at the same address on both sides")                   \
    X(DEVICE, "device", "the device survives")                                                     \
    X(READONLY, "readonly", "a read-only array stays read-only")                                   \
    X(LIFETIME, "lifetime", "deleters run exactly once; buffers are released once per get")

enum ic_check {
#define IC_CHECK_ENUM(e, name, summary) IC_CHECK_##e,
    IC_CHECK_LIST(IC_CHECK_ENUM)
#undef IC_CHECK_ENUM
        IC_CHECK_COUNT
};

enum ic_check_status {
    IC_CHECK_NOT_RUN = 0,
    IC_CHECK_PASS,
    IC_CHECK_FAIL,
    IC_CHECK_SKIP,
};

#define IC_NOTE_MAX 400
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
    char documented[IC_DOCUMENTED_MAX];   /* the library's documentation of the deviation */
    char diagnostic[IC_DIAGNOSTIC_MAX];   /* one or two sentences a person can act on */
    char request[160];                    /* what the consumer asked the producer for */
    char exported[160];                   /* what the producer exported */
    double duration_ms;
    struct ic_check_result checks[IC_CHECK_COUNT];
};

const char *ic_outcome_name(enum ic_outcome outcome);
int ic_outcome_from_name(const char *name, enum ic_outcome *ret);
bool ic_outcome_is_failure(enum ic_outcome outcome);

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

/* The JSON object of a result (outcome, rule, diagnostic, request, exported, ms, checks). */
cJSON *ic_result_to_json(const struct ic_result *res);

/* Reads what ic_result_to_json wrote. IC_EPROTO when the object is malformed. */
int ic_result_from_json(const cJSON *json, struct ic_result *ret);

/* The JSON object of one case with its result: id, the dimensions, the result, and the
 * library its failure is charged to. The same form in the stream and the report. */
struct ic_case;
cJSON *ic_case_to_json(const struct ic_case *c, const struct ic_result *res);

#endif
