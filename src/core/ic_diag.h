/*
 * ic_diag: what the protocol validators observed, each entry citing the rule it is about.
 *
 * Contract
 * - A rule is cited by its value in the rules table (ic_rules.h), never by a string. Each
 *   entry also names the side that broke the rule: the rule's own side unless the finder says
 *   otherwise (ic_diag_add_side).
 * - An error means the export or import broke the rule: the case fails. A warning records
 *   a spec ambiguity or a "should": it is reported, and the case may pass.
 * - The list has a fixed capacity; entries past it are counted in `dropped`, never lost
 *   silently. Messages longer than the slot are truncated. Nothing here allocates.
 */
#ifndef IC_DIAG_H
#define IC_DIAG_H

#include <stdbool.h>

#include "ic_rules.h"

#define IC_DIAG_MAX 16
#define IC_DIAG_MSG_MAX 320

enum ic_severity {
    IC_SEV_WARNING = 1,
    IC_SEV_ERROR = 2,
};

struct ic_diag_entry {
    enum ic_severity severity;
    enum ic_rule rule;
    enum ic_side side;
    bool provisional; /* may change on a second look (a deleter not called yet) */
    char message[IC_DIAG_MSG_MAX];
};

struct ic_diag {
    int count;
    int errors;
    int dropped;
    struct ic_diag_entry items[IC_DIAG_MAX];
};

void ic_diag_init(struct ic_diag *diag);

/* Records an entry charged to `side` (IC_SIDE_NONE: the rule's own side); the message is
 * printf-formatted. */
void ic_diag_add_side(struct ic_diag *diag, enum ic_severity severity, enum ic_rule rule,
                      enum ic_side side, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define ic_diag_add(diag, severity, rule, ...)                                                     \
    ic_diag_add_side((diag), (severity), (rule), IC_SIDE_NONE, __VA_ARGS__)
#define ic_diag_error(diag, rule, ...) ic_diag_add((diag), IC_SEV_ERROR, (rule), __VA_ARGS__)
#define ic_diag_warn(diag, rule, ...) ic_diag_add((diag), IC_SEV_WARNING, (rule), __VA_ARGS__)

/* First error entry, or NULL when there is none. */
const struct ic_diag_entry *ic_diag_first_error(const struct ic_diag *diag);

/* True when some entry (of any severity) cites `rule`. For tests and callers that check which
 * rule a validator applied. */
bool ic_diag_has_rule(const struct ic_diag *diag, enum ic_rule rule);

/* Joins all entries as "[rule] message; [rule] message" into buf (always terminated). */
void ic_diag_format(const struct ic_diag *diag, char *buf, int size);

#endif
