/*
 * test_diag.h: what the validator tests ask of an ic_diag, in one place.
 *
 * has_error and has_warning say whether a validator cited a rule. Every rule they find is
 * also written, one id per line, to the file named by $IC_RULES_FIRED (when set): the rules
 * coverage test (tests/integration/test_rules.py) reads those files after the suite and fails
 * for any rule of the table that no test made fire. show_diag prints what a validator said, so
 * that a run's log shows the messages users will read.
 */
#ifndef IC_TEST_DIAG_H
#define IC_TEST_DIAG_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ic_diag.h"
#include "tap.h"

static inline void test_rule_fired(enum ic_rule rule)
{
    const char *path = getenv("IC_RULES_FIRED");
    if (!path || !*path)
        return;
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        mkdir(dir, 0777); /* the first test to fire a rule makes the directory */
    }
    FILE *log = fopen(path, "a");
    if (!log)
        return;
    fprintf(log, "%s\n", ic_rule_id(rule));
    fclose(log);
}

static inline bool test_has(const struct ic_diag *diag, enum ic_severity severity,
                            enum ic_rule rule)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].severity == severity && diag->items[i].rule == rule) {
            test_rule_fired(rule);
            return true;
        }
    }
    return false;
}

static inline bool has_error(const struct ic_diag *diag, enum ic_rule rule)
{
    return test_has(diag, IC_SEV_ERROR, rule);
}

static inline bool has_warning(const struct ic_diag *diag, enum ic_rule rule)
{
    return test_has(diag, IC_SEV_WARNING, rule);
}

/* The findings of `diag` as a TAP comment: "# what: findings" (a comment, not a subtest). */
static inline void show_diag(const char *what, const struct ic_diag *diag)
{
    char text[2048];
    ic_diag_format(diag, text, sizeof(text));
    TAP_DIAG("%s: %s", what, text[0] ? text : "(no findings)");
}

#endif
