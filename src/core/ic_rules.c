#include "ic_rules.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

#define IC_SIDE_OF_P IC_SIDE_PRODUCER
#define IC_SIDE_OF_C IC_SIDE_CONSUMER
#define IC_SIDE_OF_E IC_SIDE_NONE

static const struct ic_rule_info ic_rule_table[IC_RULE_COUNT] = {
    [IC_RULE_NONE] = {IC_RULE_NONE, "", IC_SIDE_NONE, IC_CLASS_NOTE, ""},
#define IC_RULE_ROW(e, id, side, class, text)                                                      \
    [IC_RULE_##e] = {IC_RULE_##e, id, IC_SIDE_OF_##side, IC_CLASS_##class, text},
    IC_RULE_LIST(IC_RULE_ROW)
#undef IC_RULE_ROW
};

/* The rule families, a rule id's first part: the ids of IC_RULE_SECTION_LIST. */
static const char *const ic_rule_protocols[] = {
#define IC_RULE_FAMILY(family, title, spec) (family),
    IC_RULE_SECTION_LIST(IC_RULE_FAMILY)
#undef IC_RULE_FAMILY
};

const char *ic_rule_protocol(enum ic_rule rule)
{
    const char *id = ic_rule_id(rule);
    size_t len = strcspn(id, ".");
    for (size_t i = 0; i < sizeof(ic_rule_protocols) / sizeof(ic_rule_protocols[0]); i++) {
        if (strlen(ic_rule_protocols[i]) == len && strncmp(ic_rule_protocols[i], id, len) == 0)
            return ic_rule_protocols[i];
    }
    return "";
}

const struct ic_rule_info *ic_rule_info(enum ic_rule rule)
{
    if ((int)rule <= IC_RULE_NONE || rule >= IC_RULE_COUNT)
        return NULL;
    return &ic_rule_table[rule];
}

const char *ic_rule_id(enum ic_rule rule)
{
    const struct ic_rule_info *info = ic_rule_info(rule);
    return info ? info->id : "";
}

/* IC_RULE_NONE's row has no id: no name finds it. */
IC_DEFINE_TABLE_LOOKUP(ic_rule_from_id, enum ic_rule, ic_rule_table, id)

static const char *const ic_side_names[IC_SIDE_COUNT] = {
#define IC_SIDE_NAME(e, name) [IC_SIDE_##e] = (name),
    IC_SIDE_LIST(IC_SIDE_NAME)
#undef IC_SIDE_NAME
};

const char *ic_side_name(enum ic_side side)
{
    return (int)side >= 0 && side < IC_SIDE_COUNT ? ic_side_names[side] : "none";
}

IC_DEFINE_NAMES_LOOKUP(ic_side_from_name, enum ic_side, ic_side_names)

static const struct {
    const char *name;
    const char *summary;
} ic_severity_table[IC_CLASS_COUNT] = {
#define IC_SEVERITY_ROW(e, name, summary) [IC_CLASS_##e] = {name, summary},
    IC_SEVERITY_LIST(IC_SEVERITY_ROW)
#undef IC_SEVERITY_ROW
};

const char *ic_severity_name(enum ic_severity_class severity)
{
    return IC_TABLE_FIELD(ic_severity_table, severity, IC_CLASS_COUNT, name, "invalid");
}

const char *ic_severity_summary(enum ic_severity_class severity)
{
    return IC_TABLE_FIELD(ic_severity_table, severity, IC_CLASS_COUNT, summary, "");
}

IC_DEFINE_TABLE_LOOKUP(ic_severity_from_name, enum ic_severity_class, ic_severity_table, name)

void ic_rule_anchor(enum ic_rule rule, char *buf, int size)
{
    if (size <= 0)
        return;
    snprintf(buf, (size_t)size, "%s", ic_rule_id(rule));
    for (char *p = buf; *p; p++) {
        if (*p == '.')
            *p = '-';
    }
}

static const struct ic_refusal_policy ic_refusal_table[] = {
#define IC_REFUSAL_ROW(protocol, producer, consumer, advised, why)                                 \
    {protocol, producer, consumer, advised, why},
    IC_REFUSAL_LIST(IC_REFUSAL_ROW)
#undef IC_REFUSAL_ROW
};

const struct ic_refusal_policy *ic_refusal_policy(const char *protocol)
{
    for (size_t i = 0; protocol && i < sizeof(ic_refusal_table) / sizeof(ic_refusal_table[0]);
         i++) {
        if (strcmp(ic_refusal_table[i].protocol, protocol) == 0)
            return &ic_refusal_table[i];
    }
    return NULL;
}

const struct ic_refusal_policy *ic_refusal_policies(int *ret_count)
{
    *ret_count = (int)(sizeof(ic_refusal_table) / sizeof(ic_refusal_table[0]));
    return ic_refusal_table;
}
