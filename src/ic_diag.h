/*
 * ic_diag: findings of the protocol validators, each citing the rule it is about.
 *
 * Contract
 * - A rule is cited as "<protocol> <section>.<number>" from ../shared/docs/protocols.md, for
 *   example "dlpack 2.5.13" or "buffer 5.1.2"; a rule without a number cites its section
 *   ("dlpack 2.3 errors").
 * - An error means the export or import broke the rule: the case fails. A warning records
 *   a spec ambiguity or a "should" (protocols.md §8): it is reported, and the case may pass.
 * - The list has a fixed capacity; findings past it are counted in `dropped`, never lost
 *   silently. Messages longer than the slot are truncated. Nothing here allocates.
 */
#ifndef IC_DIAG_H
#define IC_DIAG_H

#include <stdbool.h>

#define IC_DIAG_MAX 16
#define IC_DIAG_RULE_MAX 32
#define IC_DIAG_MSG_MAX 320

enum ic_severity {
    IC_SEV_WARNING = 1,
    IC_SEV_ERROR = 2,
};

struct ic_finding {
    enum ic_severity severity;
    char rule[IC_DIAG_RULE_MAX];
    char message[IC_DIAG_MSG_MAX];
};

struct ic_diag {
    int count;
    int errors;
    int dropped;
    struct ic_finding items[IC_DIAG_MAX];
};

void ic_diag_init(struct ic_diag *diag);

/* Records a finding; the message is printf-formatted. */
void ic_diag_add(struct ic_diag *diag, enum ic_severity severity, const char *rule,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define ic_diag_error(diag, rule, ...) ic_diag_add((diag), IC_SEV_ERROR, (rule), __VA_ARGS__)
#define ic_diag_warn(diag, rule, ...) ic_diag_add((diag), IC_SEV_WARNING, (rule), __VA_ARGS__)

/* First error finding, or NULL when there is none. */
const struct ic_finding *ic_diag_first_error(const struct ic_diag *diag);

/* True when some finding (of any severity) cites exactly `rule`. For tests and callers that
 * check which rule a validator applied. */
bool ic_diag_has_rule(const struct ic_diag *diag, const char *rule);

/* Joins all findings as "[rule] message; [rule] message" into buf (always terminated). */
void ic_diag_format(const struct ic_diag *diag, char *buf, int size);

#endif
