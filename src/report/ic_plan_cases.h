/*
 * ic_plan_cases: the cases of a run as a case source (ic_cases.h), made from the run's plan
 * one at a time as they are read, never all at once.
 *
 * Contract
 * - Each pass yields, in plan order, the object ic_case_to_json made of every finished case:
 *   for a case the plan decided, made again from the plan (ic_plan_result); for a case the
 *   run's result stream holds (the item's stream_offset), read back from its line; else
 *   unpacked from the plan; with the expectations applied to it
 *   (ic_expect_apply_case: its outcome and "expectation" as the report holds them) and its
 *   "finding" (ic_findings_case_finding). A case no expectation changes has its text
 *   (ic_cases_text): its line's, less the stream's "type" member, or for a case made again
 *   ic_case_json_text's; with its "finding" member added at the end, where printing the object
 *   would place it. So every reader of a run's cases (findings, the JSON report, the views)
 *   sees what the report says, and the supervisor holds one case at a time instead of the
 *   whole report (hundreds of MB for --all).
 * - The source reads the plan, the catalog and the expectations, which must outlive it and
 *   stay unchanged while it is read. It owns the case it last returned, and `matched` (which
 *   expectation entries matched some case, over every pass so far).
 * - A failure ends the pass early with its status: IC_ENOMEM; IC_EIO when the stream cannot
 *   be read; IC_EPROTO when the line at an item's offset is not that case's (the stream was
 *   changed under the run).
 */
#ifndef IC_PLAN_CASES_H
#define IC_PLAN_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "ic_cases.h"
#include "ic_expect.h"
#include "ic_findings.h"
#include "ic_plan.h"
#include "ic_result.h"
#include "ic_text.h"

struct ic_plan_cases {
    struct ic_cases base;
    const struct ic_plan *plan;
    const struct ic_catalog *catalog; /* for the cases the plan decided (ic_plan_result) */
    const struct ic_expectations *expectations; /* NULL: none */
    bool *matched;                              /* one per expectation entry */
    size_t at;                                  /* the plan index the next case is looked for */
    cJSON *current;
    struct ic_result *scratch; /* a struct ic_result is 7 KB: one, reused */
    struct ic_plan_made scratch_holds; /* what it holds (ic_plan_result_again) */
    char stream_path[4096];
    FILE *stream; /* opened at the first case the stream holds */
    char *line;   /* getline's buffer */
    size_t line_size;
    /* `current`'s text, made when it is asked for (ic_cases_text): only the JSON report's pass
     * writes it, and a case the plan decided has none until then. */
    const char *text;                      /* in `line` or in `made`; NULL: none (yet) */
    size_t text_len;                       /* its length */
    const struct ic_planned *text_to_make; /* a case the plan decided: text made from it */
    char finding[IC_FINDING_ID_MAX];       /* "" or the "finding" member the text lacks */
    struct ic_text_buf made;               /* a text made here */
};

/* The case last returned, handed to the caller, who deletes it (the source's next call no
 * longer does): for a reader that keeps cases past that call (ic_cases_relay.h). Made in the
 * arena the caller had entered (ic_json_arena_enter), if any. NULL when there is none. */
cJSON *ic_plan_cases_take(struct ic_plan_cases *source);

/* `stream_path`: the run's result stream (NULL: none). IC_ENOMEM leaves nothing to close. */
int ic_plan_cases_open(struct ic_plan_cases *source, const struct ic_plan *plan,
                       const struct ic_catalog *catalog, const struct ic_expectations *expectations,
                       const char *stream_path);
void ic_plan_cases_close(struct ic_plan_cases *source);

#endif
