#include "ic_result.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

static const struct {
    const char *name;
    bool failing;
} ic_outcome_table[IC_OUTCOME_COUNT] = {
#define IC_OUTCOME_ROW(e, name, failing) [IC_OUTCOME_##e] = {(name), (failing)},
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

static const char *const ic_check_status_names[] = {
    [IC_CHECK_NOT_RUN] = "not_run",
    [IC_CHECK_PASS] = "pass",
    [IC_CHECK_FAIL] = "fail",
    [IC_CHECK_SKIP] = "skip",
};

const char *ic_outcome_name(enum ic_outcome outcome)
{
    if ((int)outcome < 0 || outcome >= IC_OUTCOME_COUNT)
        return "invalid";
    return ic_outcome_table[outcome].name;
}

int ic_outcome_from_name(const char *name, enum ic_outcome *ret)
{
    for (int i = 0; i < IC_OUTCOME_COUNT; i++) {
        if (strcmp(ic_outcome_table[i].name, name) == 0) {
            *ret = (enum ic_outcome)i;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}

bool ic_outcome_is_failure(enum ic_outcome outcome)
{
    return (int)outcome >= 0 && outcome < IC_OUTCOME_COUNT && ic_outcome_table[outcome].failing;
}

const char *ic_check_name(enum ic_check check)
{
    return ((int)check >= 0 && check < IC_CHECK_COUNT) ? ic_check_table[check].name : "invalid";
}

const char *ic_check_summary(enum ic_check check)
{
    return ((int)check >= 0 && check < IC_CHECK_COUNT) ? ic_check_table[check].summary : "";
}

const char *ic_check_status_name(enum ic_check_status status)
{
    return ((int)status >= 0 && status <= IC_CHECK_SKIP) ? ic_check_status_names[status]
                                                          : "invalid";
}

void ic_result_check(struct ic_result *res, enum ic_check check, enum ic_check_status status,
                     const char *rule, const char *fmt, ...)
{
    struct ic_check_result *slot = &res->checks[check];
    slot->status = status;
    snprintf(slot->rule, sizeof(slot->rule), "%s", rule ? rule : "");
    slot->note[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(slot->note, sizeof(slot->note), fmt, ap);
        va_end(ap);
        /* Notes quote library text: valid UTF-8, and a cut says so. */
        ic_text_fix_formatted(slot->note, sizeof(slot->note), len);
    }
}

void ic_result_set(struct ic_result *res, enum ic_outcome outcome, const char *rule,
                   const char *fmt, ...)
{
    res->outcome = outcome;
    snprintf(res->rule, sizeof(res->rule), "%s", rule ? rule : "");
    res->diagnostic[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(res->diagnostic, sizeof(res->diagnostic), fmt, ap);
        va_end(ap);
        /* Diagnostics quote library text: valid UTF-8, and a cut says so. */
        ic_text_fix_formatted(res->diagnostic, sizeof(res->diagnostic), len);
    }
}

void ic_result_conclude(struct ic_result *res)
{
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        if (check->status == IC_CHECK_FAIL) {
            ic_result_set(res, IC_OUTCOME_FAIL, check->rule, "%s: %s", ic_check_name(i),
                          check->note);
            return;
        }
    }
    ic_result_set(res, IC_OUTCOME_PASS, NULL, NULL);
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
    if (res->rule[0] && !ic_add_string(json, "rule", res->rule))
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
        if (check->rule[0] && !ic_add_string(item, "rule", check->rule))
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

int ic_result_from_json(const cJSON *json, struct ic_result *ret)
{
    struct ic_result res;
    memset(&res, 0, sizeof(res));
    const cJSON *outcome = cJSON_GetObjectItemCaseSensitive(json, "outcome");
    if (!cJSON_IsString(outcome) || ic_outcome_from_name(outcome->valuestring, &res.outcome) < 0)
        return IC_EPROTO;
    ic_copy_json_string(json, "rule", res.rule, sizeof(res.rule));
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
        ic_copy_json_string(item, "rule", res.checks[i].rule, sizeof(res.checks[i].rule));
        ic_copy_json_string(item, "note", res.checks[i].note, sizeof(res.checks[i].note));
    }
    *ret = res;
    return 0;
}
