#include "ic_result.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ic_case.h"
#include "ic_error.h"
#include "ic_json.h"
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

static const char *const ic_stage_names[IC_STAGE_COUNT] = {
#define IC_STAGE_NAME(e, name, what) [IC_STAGE_##e] = (name),
    IC_STAGE_LIST(IC_STAGE_NAME)
#undef IC_STAGE_NAME
};

const char *ic_stage_name(enum ic_stage stage)
{
    return (unsigned)stage < IC_STAGE_COUNT ? ic_stage_names[stage] : "invalid";
}

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

/* The string member `key` of `object` into dst, cut to size - 1 bytes as snprintf cuts it;
 * "" when there is none. A result read back has sixteen of them, for each case. */
static void ic_copy_json_string(const cJSON *object, const char *key, char *dst, size_t size)
{
    const cJSON *item = ic_json_get(object, key);
    size_t len = 0;
    if (cJSON_IsString(item) && item->valuestring) {
        len = strnlen(item->valuestring, size - 1);
        memcpy(dst, item->valuestring, len);
    }
    dst[len] = '\0';
}

/* The rule, side and severity of a failure; all three absent is no failure. IC_EPROTO for a
 * rule this build does not know or a malformed field. */
static int ic_failure_from_json(const cJSON *json, enum ic_rule *rule, enum ic_side *side,
                                enum ic_severity_class *severity)
{
    const char *id = cJSON_GetStringValue(ic_json_get(json, "rule"));
    const char *side_name = cJSON_GetStringValue(ic_json_get(json, "side"));
    const char *class_name = cJSON_GetStringValue(ic_json_get(json, "severity"));
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
    const cJSON *outcome = ic_json_get(json, "outcome");
    if (!cJSON_IsString(outcome) || ic_outcome_from_name(outcome->valuestring, &res.outcome) < 0)
        return IC_EPROTO;
    if (ic_failure_from_json(json, &res.rule, &res.side, &res.severity) < 0)
        return IC_EPROTO;
    ic_copy_json_string(json, "documented", res.documented, sizeof(res.documented));
    ic_copy_json_string(json, "diagnostic", res.diagnostic, sizeof(res.diagnostic));
    ic_copy_json_string(json, "request", res.request, sizeof(res.request));
    ic_copy_json_string(json, "exported", res.exported, sizeof(res.exported));
    const cJSON *ms = ic_json_get(json, "duration_ms");
    if (cJSON_IsNumber(ms))
        res.duration_ms = ms->valuedouble;
    const cJSON *checks = ic_json_get(json, "checks");
    for (int i = 0; i < IC_CHECK_COUNT && cJSON_IsObject(checks); i++) {
        const cJSON *item = ic_json_get(checks, ic_check_name(i));
        if (!cJSON_IsObject(item))
            continue;
        const cJSON *status = ic_json_get(item, "status");
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

const char *ic_result_culprit(const struct ic_case *c, const struct ic_result *res, char *buf,
                              size_t size)
{
    if (res->side == IC_SIDE_PRODUCER || strcmp(c->producer, c->consumer) == 0)
        return c->producer;
    if (res->side == IC_SIDE_CONSUMER)
        return c->consumer;
    snprintf(buf, size, "%s+%s", c->producer, c->consumer);
    return buf;
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
            const char *culprit = ic_result_culprit(c, res, both, sizeof(both));
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

/* --- The same object as text --------------------------------------------------------------- */

/* The letter of the two-character escape cJSON prints `ch` with ('"', '\\', \b \f \n \r \t),
 * or 0. */
static char ic_json_short_escape(unsigned char ch)
{
    static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
    const char *at = ch ? strchr(from, ch) : NULL;
    return at ? to[at - from] : 0;
}

/* Whether a byte of the eight in `w` must be escaped in a JSON string: one below 0x20, a
 * quote or a backslash (bytes of 0x80 and above never are). */
static inline bool ic_json_word_escapes(uint64_t w)
{
    return ic_word_has_byte_below(w, 0x20) || ic_word_has_byte(w, '"') || ic_word_has_byte(w, '\\');
}

void ic_text_json_string(struct ic_text_buf *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = strlen(s), run = 0, at = 0;
    ic_text_buf_add(out, "\"", 1);
    while (at < len) {
        /* Eight bytes at a time while none needs escaping (most text: a case's notes and
         * refusals are a third of each stream line and report case), then byte by byte to the
         * end of the word that does. */
        uint64_t word;
        while (len - at >= 8 && (memcpy(&word, s + at, 8), !ic_json_word_escapes(word)))
            at += 8;
        size_t stop = len - at >= 8 ? at + 8 : len;
        for (; at < stop; at++) {
            unsigned char ch = (unsigned char)s[at];
            if (ch >= 32 && ch != '"' && ch != '\\')
                continue;
            ic_text_buf_add(out, s + run, at - run);
            char letter = ic_json_short_escape(ch);
            char escape[6] = {'\\', letter, 0};
            if (!letter) {
                memcpy(escape + 1, "u00", 3);
                escape[4] = hex[ch >> 4];
                escape[5] = hex[ch & 15];
            }
            ic_text_buf_add(out, escape, letter ? 2 : 6);
            run = at + 1;
        }
    }
    ic_text_buf_add(out, s + run, len - run);
    ic_text_buf_add(out, "\"", 1);
}

/* ,"key":"value" (no comma first), the value written as it is: a name of this program's own
 * tables (ASCII by construction), or a value cJSON_AddStringToObject would take as it is. The
 * keys are this file's callers' own, none with a byte to escape. */
static void ic_text_json_plain(struct ic_text_buf *out, bool *first, const char *key,
                               const char *value)
{
    ic_text_buf_add(out, *first ? "\"" : ",\"", *first ? 1 : 2);
    *first = false;
    ic_text_buf_adds(out, key);
    ic_text_buf_add(out, "\":", 2);
    if (value)
        ic_text_json_string(out, value);
    else
        ic_text_buf_add(out, "null", 4);
}

/* The same for library text, repaired as ic_add_string repairs it. */
static void ic_text_json_member(struct ic_text_buf *out, bool *first, const char *key,
                                const char *value)
{
    char repaired[IC_DIAGNOSTIC_MAX];
    if (value) {
        size_t len = strlen(value);
        if (!ic_utf8_valid(value, len)) {
            ic_utf8_repair(repaired, sizeof(repaired), value, len, NULL);
            value = repaired;
        }
    }
    ic_text_json_plain(out, first, key, value);
}

int ic_text_json_add_member(struct ic_text_buf *object, const char *key, const char *value)
{
    if (!object->data || object->len < 2 || object->data[0] != '{' ||
        object->data[object->len - 1] != '}')
        return IC_EINVAL;
    bool first = object->len == 2; /* "{}" */
    ic_text_buf_truncate(object, object->len - 1);
    ic_text_json_plain(object, &first, key, value);
    ic_text_buf_add(object, "}", 1);
    return object->status;
}

/* A whole number of thousandths below 10**12 (a duration in milliseconds, which ic_exchange
 * rounds to microseconds) as "%1.15g" prints it: its decimal digits, with no trailing zero
 * after the point and no point without them. Such a number has at most 15 significant digits,
 * which read back as the same double, and is at least 0.001, which %g writes without an
 * exponent. Returns false, writing nothing, for any other number. */
static bool ic_thousandths_text(double d, char text[IC_NUMBER_TEXT_MAX])
{
    double scaled = fabs(d) * 1000.0;
    if (!(scaled < 1e12))
        return false;
    uint64_t n = (uint64_t)(scaled + 0.5), whole = n / 1000;
    if ((double)n / 1000.0 != fabs(d))
        return false;
    unsigned fraction = (unsigned)(n % 1000), digits = 3;
    while (fraction && fraction % 10 == 0) {
        fraction /= 10;
        digits--;
    }
    size_t at = 0;
    if (d < 0)
        text[at++] = '-';
    at += ic_text_decimal(text + at, whole);
    if (fraction) {
        text[at++] = '.';
        for (unsigned i = digits; i-- > 0; fraction /= 10)
            text[at + i] = (char)('0' + fraction % 10);
        at += digits;
    }
    text[at] = '\0';
    return true;
}

void ic_number_text(double d, char text[IC_NUMBER_TEXT_MAX])
{
    if (d == 0) { /* -0 too, which cJSON from 1.7.16 prints as an int, without its sign */
        strcpy(text, "0");
    } else if (isnan(d) || isinf(d)) {
        strcpy(text, "null");
    } else if (!ic_thousandths_text(d, text)) {
        snprintf(text, IC_NUMBER_TEXT_MAX, "%1.15g", d);
        double back = strtod(text, NULL);
        double most = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
        if (!(fabs(back - d) <= most * DBL_EPSILON))
            snprintf(text, IC_NUMBER_TEXT_MAX, "%1.17g", d);
    }
}

static void ic_text_json_number(struct ic_text_buf *out, double d)
{
    char text[IC_NUMBER_TEXT_MAX];
    ic_number_text(d, text);
    ic_text_buf_adds(out, text);
}

/* The members of ic_result_to_json's object, in its order, after the members `first` says
 * were written before; with a case, the culprit follows the side (ic_case_to_json's order). */
static void ic_result_json_members(const struct ic_case *c, const struct ic_result *res,
                                   struct ic_text_buf *out, bool *first)
{
    char both[2 * IC_NAME_MAX + 2];
    ic_text_json_plain(out, first, "outcome", ic_outcome_name(res->outcome));
    if (res->rule != IC_RULE_NONE) {
        ic_text_json_plain(out, first, "rule", ic_rule_id(res->rule));
        ic_text_json_plain(out, first, "side", ic_side_name(res->side));
        if (c)
            ic_text_json_member(out, first, "culprit",
                                ic_result_culprit(c, res, both, sizeof(both)));
        ic_text_json_plain(out, first, "severity", ic_severity_name(res->severity));
    }
    const char *texts[][2] = {{"documented", res->documented},
                              {"diagnostic", res->diagnostic},
                              {"request", res->request},
                              {"exported", res->exported}};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if (texts[i][1][0])
            ic_text_json_member(out, first, texts[i][0], texts[i][1]);
    }
    ic_text_buf_adds(out, ",\"duration_ms\":");
    ic_text_json_number(out, res->duration_ms);
    ic_text_buf_adds(out, ",\"checks\":{");
    bool first_check = true;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        if (check->status == IC_CHECK_NOT_RUN)
            continue;
        if (!first_check)
            ic_text_buf_add(out, ",", 1);
        first_check = false;
        bool first_field = true;
        ic_text_json_string(out, ic_check_name(i));
        ic_text_buf_add(out, ":{", 2);
        ic_text_json_plain(out, &first_field, "status", ic_check_status_name(check->status));
        if (check->status == IC_CHECK_FAIL) {
            ic_text_json_plain(out, &first_field, "rule", ic_rule_id(check->rule));
            ic_text_json_plain(out, &first_field, "side", ic_side_name(check->side));
            ic_text_json_plain(out, &first_field, "severity", ic_severity_name(check->severity));
        } else if (check->rule != IC_RULE_NONE) {
            ic_text_json_plain(out, &first_field, "rule", ic_rule_id(check->rule));
            ic_text_json_plain(out, &first_field, "severity", ic_severity_name(check->severity));
        }
        if (check->note[0])
            ic_text_json_member(out, &first_field, "note", check->note);
        ic_text_buf_add(out, "}", 1);
    }
    ic_text_buf_add(out, "}", 1);
}

int ic_case_json_text(const struct ic_case *c, const struct ic_result *res, struct ic_text_buf *out)
{
    char id[IC_CASE_ID_MAX];
    const struct ic_variant_info *variant = ic_variant_info(c->variant);
    bool first = true;
    if (ic_case_format_id(c, id, sizeof(id)) < 0)
        return IC_EINVAL;
    ic_text_buf_add(out, "{", 1);
    ic_text_json_member(out, &first, "id", id);
    ic_text_json_plain(out, &first, "protocol", ic_protocol_id(c->protocol));
    ic_text_json_member(out, &first, "producer", c->producer);
    ic_text_json_member(out, &first, "consumer", c->consumer);
    ic_text_json_plain(out, &first, "device", ic_device_kind_name(c->device.kind));
    ic_text_json_plain(out, &first, "dtype", ic_dtype_name(c->dtype));
    ic_text_json_plain(out, &first, "layout", ic_layout_name(c->layout));
    ic_text_json_plain(out, &first, "variant", variant->id[0] ? variant->id : NULL);
    ic_result_json_members(c, res, out, &first);
    ic_text_buf_add(out, "}", 1);
    return out->status;
}

int ic_result_json_text(const struct ic_result *res, struct ic_text_buf *out)
{
    bool first = true;
    ic_text_buf_add(out, "{", 1);
    ic_result_json_members(NULL, res, out, &first);
    ic_text_buf_add(out, "}", 1);
    return out->status;
}

/* --- The packed form ----------------------------------------------------------------------- */

/* The fixed part of a blob; the texts follow it, each with its terminating NUL, in the order
 * of ic_result_texts. */
struct ic_packed_check {
    uint8_t status, side, severity;
    uint16_t rule;
};

struct ic_packed_head {
    double duration_ms;
    struct ic_packed_check checks[IC_CHECK_COUNT];
};

enum { IC_PACKED_TEXTS = 4 + IC_CHECK_COUNT };

_Static_assert(IC_RULE_COUNT <= UINT16_MAX && IC_SIDE_COUNT <= UINT8_MAX &&
                   IC_CHECK_STATUS_COUNT <= UINT8_MAX,
               "a packed check holds a rule in 16 bits, a side and a status in 8");

/* The text fields of a result, in their packed order, with their capacities. */
static void ic_result_texts(struct ic_result *res, char *texts[IC_PACKED_TEXTS],
                            size_t sizes[IC_PACKED_TEXTS])
{
    texts[0] = res->documented;
    sizes[0] = sizeof(res->documented);
    texts[1] = res->diagnostic;
    sizes[1] = sizeof(res->diagnostic);
    texts[2] = res->request;
    sizes[2] = sizeof(res->request);
    texts[3] = res->exported;
    sizes[3] = sizeof(res->exported);
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        texts[4 + i] = res->checks[i].note;
        sizes[4 + i] = sizeof(res->checks[i].note);
    }
}

int ic_result_pack(const struct ic_result *res, struct ic_result_packed *ret)
{
    char *texts[IC_PACKED_TEXTS];
    size_t sizes[IC_PACKED_TEXTS], lengths[IC_PACKED_TEXTS];
    size_t total = sizeof(struct ic_packed_head);
    /* Only read through: the fields are named once, in ic_result_texts. */
    ic_result_texts((struct ic_result *)res, texts, sizes);
    for (int i = 0; i < IC_PACKED_TEXTS; i++) {
        lengths[i] = strnlen(texts[i], sizes[i] - 1);
        total += lengths[i] + 1;
    }
    unsigned char *blob = malloc(total);
    if (!blob)
        return IC_ENOMEM;
    struct ic_packed_head head;
    memset(&head, 0, sizeof(head));
    head.duration_ms = res->duration_ms;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        head.checks[i] = (struct ic_packed_check){(uint8_t)check->status, (uint8_t)check->side,
                                                  (uint8_t)check->severity, (uint16_t)check->rule};
    }
    memcpy(blob, &head, sizeof(head));
    unsigned char *at = blob + sizeof(head);
    for (int i = 0; i < IC_PACKED_TEXTS; i++) {
        memcpy(at, texts[i], lengths[i]);
        at[lengths[i]] = '\0';
        at += lengths[i] + 1;
    }
    free(ret->blob);
    *ret = (struct ic_result_packed){res->outcome, res->rule, res->side, res->severity, blob};
    return 0;
}

void ic_result_unpack(const struct ic_result_packed *packed, struct ic_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->outcome = packed->outcome;
    ret->rule = packed->rule;
    ret->side = packed->side;
    ret->severity = packed->severity;
    if (!packed->blob)
        return;
    struct ic_packed_head head;
    memcpy(&head, packed->blob, sizeof(head));
    ret->duration_ms = head.duration_ms;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        struct ic_check_result *check = &ret->checks[i];
        check->status = (enum ic_check_status)head.checks[i].status;
        check->side = (enum ic_side)head.checks[i].side;
        check->severity = (enum ic_severity_class)head.checks[i].severity;
        check->rule = (enum ic_rule)head.checks[i].rule;
    }
    char *texts[IC_PACKED_TEXTS];
    size_t sizes[IC_PACKED_TEXTS];
    ic_result_texts(ret, texts, sizes);
    const char *at = (const char *)packed->blob + sizeof(head);
    for (int i = 0; i < IC_PACKED_TEXTS; i++) {
        size_t length = strlen(at); /* at most sizes[i] - 1: it was packed from there */
        memcpy(texts[i], at, length + 1);
        at += length + 1;
    }
}

void ic_result_packed_release(struct ic_result_packed *packed)
{
    free(packed->blob);
    memset(packed, 0, sizeof(*packed));
}
