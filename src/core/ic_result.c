#include "ic_result.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ic_case.h"
#include "ic_error.h"
#include "ic_text.h"

static const struct ic_outcome_info ic_outcome_table[IC_OUTCOME_COUNT] = {
#define IC_OUTCOME_ROW(e, name, failing, passed, junit, category, mark, label, rank, badness)      \
    [IC_OUTCOME_##e] = {(name), (failing), (passed), (junit),  (category),                         \
                        (mark), (label),   (rank),   (badness)},
    IC_OUTCOME_LIST(IC_OUTCOME_ROW)
#undef IC_OUTCOME_ROW
};

static const struct {
    const char *name;
    const char *summary;
} ic_check_table[IC_CHECK_COUNT] = {
#define IC_CHECK_ROW(e, name, summary) [IC_CHECK_##e] = {(name), (summary)},
    IC_CHECK_LIST(IC_CHECK_ROW)
#undef IC_CHECK_ROW
};

static const char *const ic_check_status_names[IC_CHECK_STATUS_COUNT] = {
#define IC_CHECK_STATUS_NAME(e, name) [IC_CHECK_##e] = (name),
    IC_CHECK_STATUS_LIST(IC_CHECK_STATUS_NAME)
#undef IC_CHECK_STATUS_NAME
};

const char *ic_outcome_name(enum ic_outcome outcome)
{
    return IC_TABLE_FIELD(ic_outcome_table, outcome, IC_OUTCOME_COUNT, name, "invalid");
}

IC_DEFINE_TABLE_LOOKUP(ic_outcome_from_name, enum ic_outcome, ic_outcome_table, name)

bool ic_outcome_is_failure(enum ic_outcome outcome)
{
    return IC_TABLE_FIELD(ic_outcome_table, outcome, IC_OUTCOME_COUNT, failing, false);
}

const struct ic_outcome_info *ic_outcome_info(enum ic_outcome outcome)
{
    return IC_TABLE_ROW(ic_outcome_table, outcome, IC_OUTCOME_COUNT);
}

int ic_outcome_worst(const size_t counts[IC_OUTCOME_COUNT])
{
    int worst = -1;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        if (counts[o] && (worst < 0 || ic_outcome_table[o].rank < ic_outcome_table[worst].rank))
            worst = o;
    }
    return worst;
}

size_t ic_outcome_failures(const size_t counts[IC_OUTCOME_COUNT])
{
    size_t failures = 0;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        if (ic_outcome_table[o].failing)
            failures += counts[o];
    }
    return failures;
}

const char *ic_check_name(enum ic_check check)
{
    return IC_TABLE_FIELD(ic_check_table, check, IC_CHECK_COUNT, name, "invalid");
}

const char *ic_check_summary(enum ic_check check)
{
    return IC_TABLE_FIELD(ic_check_table, check, IC_CHECK_COUNT, summary, "");
}

const char *ic_check_status_name(enum ic_check_status status)
{
    return ((int)status >= 0 && status < IC_CHECK_STATUS_COUNT) ? ic_check_status_names[status]
                                                                : "invalid";
}

static void ic_result_note(char *dst, size_t size, const char *fmt, va_list ap)
{
    dst[0] = '\0';
    if (!fmt)
        return;
    int len = vsnprintf(dst, size, fmt, ap);
    /* Notes and diagnostics quote library text: valid UTF-8, and a cut says so. */
    ic_text_fix_formatted(dst, size, len);
}

/* The side and severity a broken rule charges: the side given, else the rule's own; the rule's
 * class, else `fallback` (for IC_RULE_NONE). */
static void ic_rule_charge(enum ic_rule rule, enum ic_side side, enum ic_severity_class fallback,
                           enum ic_side *ret_side, enum ic_severity_class *ret_severity)
{
    const struct ic_rule_info *info = ic_rule_info(rule);
    *ret_side = side != IC_SIDE_NONE ? side : info ? info->side : IC_SIDE_NONE;
    *ret_severity = info ? info->severity : fallback;
}

void ic_result_check(struct ic_result *res, enum ic_check check, enum ic_check_status status,
                     const char *fmt, ...)
{
    struct ic_check_result *slot = &res->checks[check];
    va_list ap;
    memset(slot, 0, sizeof(*slot));
    slot->status = status;
    va_start(ap, fmt);
    ic_result_note(slot->note, sizeof(slot->note), fmt, ap);
    va_end(ap);
}

void ic_result_fail(struct ic_result *res, enum ic_check check, enum ic_rule rule,
                    enum ic_side side, const char *fmt, ...)
{
    struct ic_check_result *slot = &res->checks[check];
    va_list ap;
    slot->status = IC_CHECK_FAIL;
    slot->rule = rule;
    ic_rule_charge(rule, side, IC_CLASS_NONCONFORMANT, &slot->side, &slot->severity);
    va_start(ap, fmt);
    ic_result_note(slot->note, sizeof(slot->note), fmt, ap);
    va_end(ap);
}

void ic_result_set(struct ic_result *res, enum ic_outcome outcome, const char *fmt, ...)
{
    va_list ap;
    res->outcome = outcome;
    res->rule = IC_RULE_NONE;
    res->side = IC_SIDE_NONE;
    res->severity = IC_CLASS_NOTE;
    res->documented[0] = '\0';
    va_start(ap, fmt);
    ic_result_note(res->diagnostic, sizeof(res->diagnostic), fmt, ap);
    va_end(ap);
}

void ic_result_set_fault(struct ic_result *res, enum ic_outcome outcome, enum ic_rule rule,
                         enum ic_side side, const char *fmt, ...)
{
    va_list ap;
    res->outcome = outcome;
    res->rule = rule;
    ic_rule_charge(rule, side, IC_CLASS_HARMFUL, &res->side, &res->severity);
    res->documented[0] = '\0';
    va_start(ap, fmt);
    ic_result_note(res->diagnostic, sizeof(res->diagnostic), fmt, ap);
    va_end(ap);
}

int ic_result_primary_check(const struct ic_result *res)
{
    int primary = -1;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        if (check->status != IC_CHECK_FAIL)
            continue;
        if (primary < 0 || check->severity < res->checks[primary].severity)
            primary = i;
    }
    return primary;
}

void ic_result_conclude(struct ic_result *res)
{
    int primary = ic_result_primary_check(res);
    if (primary < 0) {
        ic_result_set(res, IC_OUTCOME_PASS, NULL);
        return;
    }
    const struct ic_check_result *check = &res->checks[primary];
    res->outcome = IC_OUTCOME_FAIL;
    res->rule = check->rule;
    res->side = check->side;
    res->severity = check->severity;
    snprintf(res->diagnostic, sizeof(res->diagnostic), "%s: %s", ic_check_name(primary),
             check->note);
}

static bool ic_add_string(cJSON *object, const char *key, const char *value)
{
    /* Fields filled without ic_result_set (request, exported) may hold a cut character or a
     * library's raw bytes; JSON must be UTF-8. No field is longer than a diagnostic. */
    char repaired[IC_DIAGNOSTIC_MAX];
    size_t len = strlen(value);
    if (!ic_utf8_valid(value, len)) {
        ic_utf8_repair(repaired, sizeof(repaired), value, len, NULL);
        value = repaired;
    }
    return cJSON_AddStringToObject(object, key, value) != NULL;
}

cJSON *ic_result_to_json(const struct ic_result *res)
{
    cJSON *json = cJSON_CreateObject();
    cJSON *checks = NULL;
    if (!json)
        return NULL;
    if (!ic_add_string(json, "outcome", ic_outcome_name(res->outcome)))
        goto fail;
    if (res->rule != IC_RULE_NONE &&
        (!ic_add_string(json, "rule", ic_rule_id(res->rule)) ||
         !ic_add_string(json, "side", ic_side_name(res->side)) ||
         !ic_add_string(json, "severity", ic_severity_name(res->severity))))
        goto fail;
    if (res->documented[0] && !ic_add_string(json, "documented", res->documented))
        goto fail;
    if (res->diagnostic[0] && !ic_add_string(json, "diagnostic", res->diagnostic))
        goto fail;
    if (res->request[0] && !ic_add_string(json, "request", res->request))
        goto fail;
    if (res->exported[0] && !ic_add_string(json, "exported", res->exported))
        goto fail;
    if (!cJSON_AddNumberToObject(json, "duration_ms", res->duration_ms))
        goto fail;
    checks = cJSON_AddObjectToObject(json, "checks");
    if (!checks)
        goto fail;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        if (check->status == IC_CHECK_NOT_RUN)
            continue;
        cJSON *item = cJSON_AddObjectToObject(checks, ic_check_name(i));
        if (!item || !ic_add_string(item, "status", ic_check_status_name(check->status)))
            goto fail;
        if (check->status == IC_CHECK_FAIL &&
            (!ic_add_string(item, "rule", ic_rule_id(check->rule)) ||
             !ic_add_string(item, "side", ic_side_name(check->side)) ||
             !ic_add_string(item, "severity", ic_severity_name(check->severity))))
            goto fail;
        /* A pass or skip may carry a note-class rule: conformant, but worth knowing. */
        if (check->status != IC_CHECK_FAIL && check->rule != IC_RULE_NONE &&
            (!ic_add_string(item, "rule", ic_rule_id(check->rule)) ||
             !ic_add_string(item, "severity", ic_severity_name(check->severity))))
            goto fail;
        if (check->note[0] && !ic_add_string(item, "note", check->note))
            goto fail;
    }
    return json;
fail:
    cJSON_Delete(json);
    return NULL;
}

static void ic_copy_json_string(const cJSON *object, const char *key, char *dst, size_t size)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (cJSON_IsString(item) && item->valuestring)
        snprintf(dst, size, "%s", item->valuestring);
    else
        dst[0] = '\0';
}

/* The rule, side and severity of a failure; all three absent is no failure. IC_EPROTO for a
 * rule this build does not know or a malformed field. */
static int ic_failure_from_json(const cJSON *json, enum ic_rule *rule, enum ic_side *side,
                                enum ic_severity_class *severity)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "rule"));
    const char *side_name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "side"));
    const char *class_name =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "severity"));
    *rule = IC_RULE_NONE;
    *side = IC_SIDE_NONE;
    *severity = IC_CLASS_NOTE;
    if (!id)
        return 0;
    if (ic_rule_from_id(id, rule) < 0 || ic_severity_from_name(class_name, severity) < 0 ||
        (side_name && ic_side_from_name(side_name, side) < 0))
        return IC_EPROTO;
    return 0;
}

int ic_result_from_json(const cJSON *json, struct ic_result *ret)
{
    struct ic_result res;
    memset(&res, 0, sizeof(res));
    const cJSON *outcome = cJSON_GetObjectItemCaseSensitive(json, "outcome");
    if (!cJSON_IsString(outcome) || ic_outcome_from_name(outcome->valuestring, &res.outcome) < 0)
        return IC_EPROTO;
    if (ic_failure_from_json(json, &res.rule, &res.side, &res.severity) < 0)
        return IC_EPROTO;
    ic_copy_json_string(json, "documented", res.documented, sizeof(res.documented));
    ic_copy_json_string(json, "diagnostic", res.diagnostic, sizeof(res.diagnostic));
    ic_copy_json_string(json, "request", res.request, sizeof(res.request));
    ic_copy_json_string(json, "exported", res.exported, sizeof(res.exported));
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(json, "duration_ms");
    if (cJSON_IsNumber(ms))
        res.duration_ms = ms->valuedouble;
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(json, "checks");
    for (int i = 0; i < IC_CHECK_COUNT && cJSON_IsObject(checks); i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(checks, ic_check_name(i));
        if (!cJSON_IsObject(item))
            continue;
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(item, "status");
        if (!cJSON_IsString(status))
            return IC_EPROTO;
        enum ic_check_status value = IC_CHECK_NOT_RUN;
        for (int s = IC_CHECK_PASS; s <= IC_CHECK_SKIP; s++) {
            if (strcmp(status->valuestring, ic_check_status_names[s]) == 0)
                value = (enum ic_check_status)s;
        }
        if (value == IC_CHECK_NOT_RUN)
            return IC_EPROTO;
        res.checks[i].status = value;
        if (ic_failure_from_json(item, &res.checks[i].rule, &res.checks[i].side,
                                 &res.checks[i].severity) < 0)
            return IC_EPROTO;
        ic_copy_json_string(item, "note", res.checks[i].note, sizeof(res.checks[i].note));
    }
    *ret = res;
    return 0;
}

cJSON *ic_case_to_json(const struct ic_case *c, const struct ic_result *res)
{
    char id[IC_CASE_ID_MAX];
    const struct ic_variant_info *variant = ic_variant_info(c->variant);
    cJSON *json = ic_result_to_json(res);
    if (!json || ic_case_format_id(c, id, sizeof(id)) < 0)
        goto fail;
    /* Identity first, so the object reads naturally; cJSON appends, so build a new one. */
    cJSON *ordered = cJSON_CreateObject();
    if (!ordered)
        goto fail;
    if (!cJSON_AddStringToObject(ordered, "id", id) ||
        !cJSON_AddStringToObject(ordered, "protocol", ic_protocol_id(c->protocol)) ||
        !cJSON_AddStringToObject(ordered, "producer", c->producer) ||
        !cJSON_AddStringToObject(ordered, "consumer", c->consumer) ||
        !cJSON_AddStringToObject(ordered, "device", ic_device_kind_name(c->device.kind)) ||
        !cJSON_AddStringToObject(ordered, "dtype", ic_dtype_name(c->dtype)) ||
        !cJSON_AddStringToObject(ordered, "layout", ic_layout_name(c->layout)) ||
        !(variant->id[0] ? cJSON_AddStringToObject(ordered, "variant", variant->id)
                         : cJSON_AddNullToObject(ordered, "variant"))) {
        cJSON_Delete(ordered);
        goto fail;
    }
    while (json->child) {
        cJSON *item = json->child;
        cJSON_DetachItemViaPointer(json, item);
        if (!cJSON_AddItemToObject(ordered, item->string, item)) {
            cJSON_Delete(item);
            cJSON_Delete(ordered);
            goto fail;
        }
        /* The library the failure is charged to, right after the side that names it. */
        if (strcmp(item->string, "side") == 0) {
            char both[2 * IC_NAME_MAX + 2];
            snprintf(both, sizeof(both), "%s+%s", c->producer, c->consumer);
            const char *culprit = res->side == IC_SIDE_PRODUCER           ? c->producer
                                  : res->side == IC_SIDE_CONSUMER         ? c->consumer
                                  : strcmp(c->producer, c->consumer) == 0 ? c->producer
                                                                          : both;
            if (!cJSON_AddStringToObject(ordered, "culprit", culprit)) {
                cJSON_Delete(ordered);
                goto fail;
            }
        }
    }
    cJSON_Delete(json);
    return ordered;
fail:
    cJSON_Delete(json);
    return NULL;
}
