/*
 * ic_resume: finishing an interrupted run from what it left (`interopcheck --resume REPORT`).
 *
 * Contract
 * - ic_resume_open reads REPORT (a JSON report, interrupted or not, or a run's FILE.jsonl
 *   stream, with or without its end line) and makes the options the run had: its filters,
 *   seed, case timeout and extra probe directories. It refuses options that would change the
 *   selection (ic_options_parse already does). The output defaults to REPORT (a JSON report)
 *   or the stream's JSON sibling.
 * - ic_resume_restore gives every planned case that REPORT holds its recorded result (the
 *   observed outcome, before expectations) and leaves it out of the cases to run; the rest
 *   run as usual, so the report written at the end holds exactly the planned cases.
 * - struct ic_resume owns the previous report and the strings the options point into; the
 *   options must not outlive it (ic_resume_close).
 */
#ifndef IC_RESUME_H
#define IC_RESUME_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "ic_options.h"
#include "ic_plan.h"

struct ic_resume_case;

struct ic_resume {
    cJSON *report;
    struct ic_resume_case *cases; /* the finished cases, sorted by id */
    size_t ncases;
    struct ic_strings strings; /* copies of probe directories and the output path (owned) */
    struct ic_strings probe_dirs; /* the options' probe directories while resuming */
};

int ic_resume_open(const char *path, struct ic_options *opts, struct ic_resume *resume,
                   char *err, size_t err_size);

/* Marks the planned cases REPORT finished: result set, not to run. Returns how many, or a
 * negative error (a recorded result that does not parse: the report is damaged). */
int ic_resume_restore(const struct ic_resume *resume, struct ic_plan *plan, char *err,
                      size_t err_size);

/* --last-failed REPORT: reads REPORT as ic_resume_open does and makes its options (seed,
 * timeout, probe directories, filters), with the producers and consumers narrowed to the
 * libraries of the cases that failed, crashed, timed out or erred (after expectations);
 * those cases are the ones indexed. IC_ENOTFOUND, with err saying so, when there are none.
 * The output is not defaulted: the new run does not overwrite REPORT. */
int ic_last_failed_open(const char *path, struct ic_options *opts, struct ic_resume *resume,
                        char *err, size_t err_size);

/* Leaves in the plan only the cases ic_last_failed_open indexed, in plan order. Returns how
 * many are left. */
int ic_last_failed_narrow(const struct ic_resume *resume, struct ic_plan *plan);

void ic_resume_close(struct ic_resume *resume);

#endif
