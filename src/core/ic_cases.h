/*
 * ic_cases: a report's cases, read one at a time, as often as a reader needs.
 *
 * Contract
 * - A case source yields the case objects of a report (ic_case_to_json's form) in report
 *   order, one at a time: ic_cases_first starts a pass (from the first case), ic_cases_next
 *   goes on; both return NULL at the end of the pass. A reader may make as many passes as it
 *   needs; every pass yields the same cases.
 * - Why: the run's report has hundreds of thousands of cases. Held as one JSON tree they took
 *   most of the supervisor's memory; a source instead makes each case when it is read (from
 *   the plan and the result stream) and frees it at the next call, so the report and its
 *   views are written in bounded memory.
 * - The object returned is the source's, valid until the next call on the source: a reader
 *   that keeps a case, or a string of it, beyond that copies it. Readers do not change it.
 * - A source that fails (no memory, an unreadable stream) returns NULL early and keeps the
 *   error in `status`: a reader checks it after each pass (ic_cases_status), and treats the
 *   pass as incomplete when it is negative.
 * - ic_cases_of_array wraps a cJSON array the caller owns and keeps alive (a report read from
 *   a file, a merge): its cases are the array's elements.
 * - ic_cases_text gives the case last returned as the one-line JSON text cJSON_PrintUnformatted
 *   would make of it, when the source has that text at hand (a case read back unchanged from
 *   the line a run's stream printed it on), so that a writer copies it instead of printing the
 *   object again; NULL otherwise. The text is the source's, valid until the next call.
 */
#ifndef IC_CASES_H
#define IC_CASES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct ic_cases {
    /* The first case of a new pass, or NULL (end, or failure: status). */
    const cJSON *(*first)(struct ic_cases *self);
    /* The next case of the pass, or NULL. */
    const cJSON *(*next)(struct ic_cases *self);
    /* The text of the case last returned, or NULL (see above); NULL: the source has none. */
    const char *(*text)(struct ic_cases *self, size_t *ret_len);
    size_t count; /* the cases a whole pass yields */
    int status;   /* 0, or the first failure (IC_E*) */
};

static inline const cJSON *ic_cases_first(struct ic_cases *cases)
{
    return cases->first(cases);
}

static inline const cJSON *ic_cases_next(struct ic_cases *cases)
{
    return cases->next(cases);
}

static inline const char *ic_cases_text(struct ic_cases *cases, size_t *ret_len)
{
    return cases->text ? cases->text(cases, ret_len) : NULL;
}

static inline int ic_cases_status(const struct ic_cases *cases)
{
    return cases->status;
}

/* Iterates `c` over one pass of `cases`. */
#define ic_cases_for_each(c, cases)                                                                \
    for ((c) = ic_cases_first(cases); (c); (c) = ic_cases_next(cases))

/* A source over the elements of `array` (NULL or not an array: no cases). */
struct ic_cases_array {
    struct ic_cases base;
    const cJSON *array;
    const cJSON *at;
};

void ic_cases_of_array(struct ic_cases_array *source, const cJSON *array);

#endif
