#include "ic_report_junit.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_result.h"
#include "ic_text.h"

/* Caps on library text, in escaped bytes. A message attribute is what CI pages show in a
 * list, so it stays short; the element body is the detail a person opens. Diagnostics are at
 * most IC_DIAGNOSTIC_MAX bytes in a report the tool wrote, but a merged or edited report may
 * hold anything. */
#define IC_JUNIT_MESSAGE_CAP 1000
#define IC_JUNIT_FIELD_CAP   8000
#define IC_JUNIT_NOTE_CAP    2000
#define IC_JUNIT_NAME_CAP    300

/* One case, with what groups it into a suite. */
struct ic_junit_case {
    const cJSON *json;
    const char *environment; /* "" outside a merged report */
    const char *protocol, *producer, *consumer;
    size_t index; /* position in the report: the order within a suite */
};

/* One <testsuite>: a run of cases in the sorted array. */
struct ic_junit_suite {
    size_t first, count;
    size_t order; /* index of its first case in the report: suites come in report order */
};

static int ic_case_outcome(const cJSON *c)
{
    enum ic_outcome outcome;
    const char *name = ic_json_string(c, "outcome");
    if (!name || ic_outcome_from_name(name, &outcome) < 0)
        return IC_OUTCOME_ERROR; /* a case the writer cannot read is not a pass */
    return (int)outcome;
}

static int ic_junit_case_cmp(const void *a, const void *b)
{
    const struct ic_junit_case *x = a, *y = b;
    int d = strcmp(x->environment, y->environment);
    if (!d)
        d = strcmp(x->protocol, y->protocol);
    if (!d)
        d = strcmp(x->producer, y->producer);
    if (!d)
        d = strcmp(x->consumer, y->consumer);
    if (!d)
        d = x->index < y->index ? -1 : x->index > y->index;
    return d;
}

static bool ic_junit_same_suite(const struct ic_junit_case *x, const struct ic_junit_case *y)
{
    return strcmp(x->environment, y->environment) == 0 && strcmp(x->protocol, y->protocol) == 0 &&
           strcmp(x->producer, y->producer) == 0 && strcmp(x->consumer, y->consumer) == 0;
}

static int ic_junit_suite_cmp(const void *a, const void *b)
{
    const struct ic_junit_suite *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Seconds with microseconds, written without printf's %f so that no locale can turn the
 * decimal point into a comma. */
static void ic_junit_seconds(struct ic_text_buf *out, double seconds)
{
    if (!isfinite(seconds) || seconds < 0 || seconds > 1e12)
        seconds = 0;
    unsigned long long us = (unsigned long long)(seconds * 1e6 + 0.5);
    ic_text_buf_addf(out, "%llu.%06llu", us / 1000000ULL, us % 1000000ULL);
}

static double ic_case_seconds(const cJSON *c)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(c, "duration_ms");
    return cJSON_IsNumber(ms) ? ms->valuedouble / 1000.0 : 0.0;
}

/* name="value" with the value escaped for an attribute. */
static void ic_junit_attr(struct ic_text_buf *out, const char *name, const char *value, size_t cap)
{
    ic_text_buf_addf(out, " %s=\"", name);
    ic_text_buf_add_escaped_str(out, value, IC_ESCAPE_XML_ATTR, cap);
    ic_text_buf_adds(out, "\"");
}

struct ic_junit_counts {
    size_t tests, failures, errors, skipped;
    double seconds;
};

/* The element a case's testcase holds: the outcome table's junit column. */
static const char *ic_junit_element(int outcome)
{
    const struct ic_outcome_info *info = ic_outcome_info((enum ic_outcome)outcome);
    return info ? info->junit : "error";
}

static void ic_junit_count(struct ic_junit_counts *counts, const cJSON *c)
{
    const char *element = ic_junit_element(ic_case_outcome(c));
    counts->tests++;
    if (strcmp(element, "failure") == 0)
        counts->failures++;
    else if (strcmp(element, "error") == 0)
        counts->errors++;
    else if (strcmp(element, "skipped") == 0)
        counts->skipped++;
    counts->seconds += ic_case_seconds(c);
}

static void ic_junit_count_attrs(struct ic_text_buf *out, const struct ic_junit_counts *counts,
                                 double seconds)
{
    ic_text_buf_addf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"",
                     counts->tests, counts->failures, counts->errors, counts->skipped);
    ic_junit_seconds(out, seconds);
    ic_text_buf_adds(out, "\"");
}

/* The environment a case ran in: its "environments" entry in a merged report, else the
 * report itself (which has tool, run and environment at the top). */
static const cJSON *ic_junit_environment_of(const cJSON *report, const char *id)
{
    const cJSON *entry;
    if (!id[0])
        return report;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(report, "environments"))
    {
        const char *entry_id = ic_json_string(entry, "id");
        if (entry_id && strcmp(entry_id, id) == 0)
            return entry;
    }
    return report;
}

static const char *ic_junit_library_version(const cJSON *environment, const char *name)
{
    const cJSON *lib;
    cJSON_ArrayForEach(lib, cJSON_GetObjectItemCaseSensitive(environment, "libraries"))
    {
        const char *lib_name = ic_json_string(lib, "name");
        if (lib_name && strcmp(lib_name, name) == 0)
            return ic_json_string(lib, "version");
    }
    return NULL;
}

static void ic_junit_property(struct ic_text_buf *out, const char *name, const char *value)
{
    if (!value)
        return;
    ic_text_buf_adds(out, "      <property");
    ic_junit_attr(out, "name", name, IC_JUNIT_NAME_CAP);
    ic_junit_attr(out, "value", value, IC_JUNIT_FIELD_CAP);
    ic_text_buf_adds(out, "/>\n");
}

/* What a reader of the suite needs to reproduce it: versions of the tool, of Python and of
 * both libraries, the platform, the seed. */
static void ic_junit_properties(struct ic_text_buf *out, const cJSON *report,
                                const struct ic_junit_case *first)
{
    const cJSON *scope = ic_junit_environment_of(report, first->environment);
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(scope, "tool");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(scope, "run");
    const cJSON *environment = cJSON_GetObjectItemCaseSensitive(scope, "environment");
    const cJSON *build = cJSON_GetObjectItemCaseSensitive(tool, "build");
    const cJSON *platform = cJSON_GetObjectItemCaseSensitive(environment, "platform");
    char platform_text[400];
    char key[IC_JUNIT_NAME_CAP];

    ic_text_buf_adds(out, "    <properties>\n");
    if (first->environment[0])
        ic_junit_property(out, "environment", first->environment);
    ic_junit_property(out, "interopcheck.version", ic_json_string(tool, "version"));
    ic_junit_property(out, "interopcheck.dlpack_header",
                      ic_json_string(build, "dlpack_header_version"));
    ic_junit_property(
        out, "python.version",
        ic_json_string(cJSON_GetObjectItemCaseSensitive(environment, "python"), "version"));
    snprintf(platform_text, sizeof(platform_text), "%s %s %s",
             ic_json_string_or(platform, "system", "?"),
             ic_json_string_or(platform, "release", "?"),
             ic_json_string_or(platform, "machine", "?"));
    ic_junit_property(out, "platform", platform_text);
    ic_junit_property(out, "seed", ic_json_string(run, "seed"));
    const char *libraries[2] = {first->producer, first->consumer};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && strcmp(libraries[0], libraries[1]) == 0)
            break;
        const char *version = ic_junit_library_version(environment, libraries[i]);
        if (!version)
            continue; /* interopcheck's own consumer: its version is the tool's */
        snprintf(key, sizeof(key), "library.%s.version", libraries[i]);
        ic_junit_property(out, key, version);
    }
    ic_text_buf_adds(out, "    </properties>\n");
}

/* True when `text` already cites `rule` as "[rule]", as the tool's diagnostics do. */
static bool ic_mentions_rule(const char *text, const char *rule)
{
    size_t len = strlen(rule);
    for (const char *p = strchr(text, '['); p; p = strchr(p + 1, '[')) {
        if (strncmp(p + 1, rule, len) == 0 && p[1 + len] == ']')
            return true;
    }
    return false;
}

static void ic_junit_line(struct ic_text_buf *out, const char *label, const char *value, size_t cap)
{
    if (!value || !value[0])
        return;
    ic_text_buf_addf(out, "%s: ", label);
    ic_text_buf_add_escaped_str(out, value, IC_ESCAPE_XML_TEXT, cap);
    ic_text_buf_adds(out, "\n");
}

static void ic_junit_expectation(struct ic_text_buf *out, const cJSON *c)
{
    const cJSON *expectation = cJSON_GetObjectItemCaseSensitive(c, "expectation");
    if (!cJSON_IsObject(expectation))
        return;
    ic_junit_line(out, "expectation", ic_json_string(expectation, "pattern"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "reason", ic_json_string(expectation, "reason"), IC_JUNIT_FIELD_CAP);
    ic_junit_line(out, "link", ic_json_string(expectation, "link"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "observed", ic_json_string(expectation, "observed"), IC_JUNIT_NAME_CAP);
}

/* The body of a failure, error or skip: everything the report says about the case. */
static void ic_junit_details(struct ic_text_buf *out, const cJSON *c)
{
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(c, "checks");
    const cJSON *check;

    ic_text_buf_add_escaped_str(out, ic_json_string(c, "diagnostic"), IC_ESCAPE_XML_TEXT,
                                IC_JUNIT_FIELD_CAP);
    ic_text_buf_adds(out, "\n\n");
    ic_junit_line(out, "case", ic_json_string(c, "id"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "rule", ic_json_string(c, "rule"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "request", ic_json_string(c, "request"), IC_JUNIT_NOTE_CAP);
    ic_junit_line(out, "exported", ic_json_string(c, "exported"), IC_JUNIT_NOTE_CAP);
    ic_junit_expectation(out, c);
    if (cJSON_GetArraySize(checks) > 0)
        ic_text_buf_adds(out, "checks:\n");
    cJSON_ArrayForEach(check, checks)
    {
        const char *rule = ic_json_string(check, "rule");
        const char *note = ic_json_string(check, "note");
        ic_text_buf_adds(out, "  ");
        ic_text_buf_add_escaped_str(out, check->string, IC_ESCAPE_XML_TEXT, IC_JUNIT_NAME_CAP);
        ic_text_buf_adds(out, ": ");
        ic_text_buf_add_escaped_str(out, ic_json_string_or(check, "status", "?"),
                                    IC_ESCAPE_XML_TEXT, IC_JUNIT_NAME_CAP);
        if (rule && !(note && ic_mentions_rule(note, rule))) {
            ic_text_buf_adds(out, " [");
            ic_text_buf_add_escaped_str(out, rule, IC_ESCAPE_XML_TEXT, IC_JUNIT_NAME_CAP);
            ic_text_buf_adds(out, "]");
        }
        if (note && note[0]) {
            ic_text_buf_adds(out, " - ");
            ic_text_buf_add_escaped_str(out, note, IC_ESCAPE_XML_TEXT, IC_JUNIT_NOTE_CAP);
        }
        ic_text_buf_adds(out, "\n");
    }
}

/* The message attribute: a one-line summary, "[rule] diagnostic" or "outcome: diagnostic". */
static void ic_junit_message(struct ic_text_buf *out, const char *prefix, const char *rule,
                             const char *text)
{
    struct ic_text_buf message;
    ic_text_buf_init(&message);
    if (prefix)
        ic_text_buf_addf(&message, "%s: ", prefix);
    if (rule && !(text && ic_mentions_rule(text, rule)))
        ic_text_buf_addf(&message, "[%s] ", rule);
    ic_text_buf_adds(&message, text ? text : "");
    if (message.status)
        out->status = message.status;
    ic_junit_attr(out, "message", ic_text_buf_str(&message), IC_JUNIT_MESSAGE_CAP);
    ic_text_buf_release(&message);
}

static void ic_junit_testcase(struct ic_text_buf *out, const struct ic_junit_case *jc,
                              const char *classname)
{
    const cJSON *c = jc->json;
    int outcome = ic_case_outcome(c);
    const char *outcome_name = ic_outcome_name((enum ic_outcome)outcome);
    const char *diagnostic = ic_json_string(c, "diagnostic");
    const char *rule = ic_json_string(c, "rule");
    const cJSON *expectation = cJSON_GetObjectItemCaseSensitive(c, "expectation");
    char name[IC_JUNIT_NAME_CAP];

    /* "<device>.<dtype>.<layout>[.<variant>]": the case id without what the classname says. */
    const char *variant = ic_json_string(c, "variant");
    if (ic_json_string(c, "device") && ic_json_string(c, "dtype") && ic_json_string(c, "layout"))
        snprintf(name, sizeof(name), "%s.%s.%s%s%s", ic_json_string(c, "device"),
                 ic_json_string(c, "dtype"), ic_json_string(c, "layout"), variant ? "." : "",
                 variant ? variant : "");
    else
        snprintf(name, sizeof(name), "%s", ic_json_string_or(c, "id", "?"));

    ic_text_buf_adds(out, "    <testcase");
    ic_junit_attr(out, "classname", classname, IC_JUNIT_NAME_CAP);
    ic_junit_attr(out, "name", name, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(out, " time=\"");
    ic_junit_seconds(out, ic_case_seconds(c));
    ic_text_buf_adds(out, "\"");

    /* Which element: the outcome table (ic_result.h); what it says: each outcome's own words. */
    const char *element = ic_junit_element(outcome);
    switch (outcome) {
    case IC_OUTCOME_PASS:
        ic_text_buf_adds(out, "/>\n");
        return;
    case IC_OUTCOME_FAIL:
    case IC_OUTCOME_CRASH:
    case IC_OUTCOME_TIMEOUT:
    case IC_OUTCOME_ERROR: {
        /* A failure's type is the rule it broke. A crash or a timeout did not run to its end:
         * the table makes it an error, as JUnit readers expect, and its message says which. */
        bool unfinished = outcome == IC_OUTCOME_CRASH || outcome == IC_OUTCOME_TIMEOUT;
        const char *type = outcome == IC_OUTCOME_FAIL && rule ? rule : outcome_name;
        ic_text_buf_addf(out, ">\n      <%s", element);
        ic_junit_message(out, unfinished ? outcome_name : NULL, rule, diagnostic);
        ic_junit_attr(out, "type", type, IC_JUNIT_NAME_CAP);
        ic_text_buf_adds(out, ">");
        ic_junit_details(out, c);
        ic_text_buf_addf(out, "</%s>\n", element);
        break;
    }
    case IC_OUTCOME_UNSUPPORTED:
        ic_text_buf_addf(out, ">\n      <%s", element);
        ic_junit_message(out, outcome_name, NULL, diagnostic);
        ic_text_buf_adds(out, "/>\n");
        break;
    case IC_OUTCOME_XFAIL:
    case IC_OUTCOME_WAIVED: {
        /* Expected: say so in the message, with the expectation's reason, and keep what was
         * observed in the body. */
        char prefix[96];
        snprintf(prefix, sizeof(prefix), "%s (observed %s)", outcome_name,
                 ic_json_string_or(expectation, "observed", "?"));
        ic_text_buf_addf(out, ">\n      <%s", element);
        ic_junit_message(out, prefix, NULL,
                         ic_json_string_or(expectation, "reason", diagnostic ? diagnostic : ""));
        ic_text_buf_adds(out, ">");
        ic_junit_details(out, c);
        ic_text_buf_addf(out, "</%s>\n", element);
        break;
    }
    case IC_OUTCOME_XPASS:
    default:
        ic_text_buf_adds(out, ">\n      <system-out>xpass: this case passed, but an expectation "
                              "says it fails\n");
        ic_junit_expectation(out, c);
        ic_text_buf_adds(out, "</system-out>\n");
        break;
    }
    ic_text_buf_adds(out, "    </testcase>\n");
}

static void ic_junit_suite(struct ic_text_buf *out, const cJSON *report,
                           const struct ic_junit_case *cases, const struct ic_junit_suite *suite,
                           size_t suite_index, const char *timestamp, const char *hostname)
{
    const struct ic_junit_case *first = &cases[suite->first];
    struct ic_junit_counts counts = {0};
    char classname[IC_JUNIT_NAME_CAP];

    for (size_t i = 0; i < suite->count; i++)
        ic_junit_count(&counts, cases[suite->first + i].json);
    snprintf(classname, sizeof(classname), "interopcheck.%s%s%s.%s.%s", first->environment,
             first->environment[0] ? "." : "", first->protocol, first->producer, first->consumer);

    ic_text_buf_addf(out, "  <testsuite id=\"%zu\"", suite_index);
    ic_junit_attr(out, "name", classname, IC_JUNIT_NAME_CAP);
    ic_junit_count_attrs(out, &counts, counts.seconds);
    if (timestamp)
        ic_junit_attr(out, "timestamp", timestamp, IC_JUNIT_NAME_CAP);
    if (hostname)
        ic_junit_attr(out, "hostname", hostname, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(out, ">\n");
    ic_junit_properties(out, report, first);
    for (size_t i = 0; i < suite->count; i++)
        ic_junit_testcase(out, &cases[suite->first + i], classname);
    ic_text_buf_adds(out, "  </testsuite>\n");
}

/* One testcase per finding: a finding that crashed or hung is an <error>, any other a
 * <failure> whose type is its rule; the body holds its cases, example and reproducer. */
static void ic_junit_finding(struct ic_text_buf *out, const cJSON *f)
{
    const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(f, "outcomes");
    bool broke = cJSON_GetObjectItemCaseSensitive(outcomes, "crash") ||
                 cJSON_GetObjectItemCaseSensitive(outcomes, "timeout");
    const char *element = broke ? "error" : "failure";
    char classname[IC_JUNIT_NAME_CAP], prefix[160];
    snprintf(classname, sizeof(classname), "interopcheck.findings.%s",
             ic_json_string_or(f, "culprit", "unknown"));
    snprintf(prefix, sizeof(prefix), "%s, %.0f cases", ic_json_string_or(f, "severity", "?"),
             cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(f, "count")));

    ic_text_buf_adds(out, "    <testcase");
    ic_junit_attr(out, "classname", classname, IC_JUNIT_NAME_CAP);
    ic_junit_attr(out, "name", ic_json_string_or(f, "id", "?"), IC_JUNIT_NAME_CAP);
    ic_text_buf_addf(out, " time=\"0\">\n      <%s", element);
    ic_junit_message(out, prefix, ic_json_string(f, "rule"), ic_json_string(f, "diagnostic"));
    ic_junit_attr(out, "type", ic_json_string_or(f, "rule", element), IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(out, ">");
    ic_junit_line(out, "culprit", ic_json_string(f, "culprit"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "side", ic_json_string(f, "side"), IC_JUNIT_NAME_CAP);
    ic_junit_line(out, "documented", ic_json_string(f, "documented"), IC_JUNIT_FIELD_CAP);
    ic_junit_line(out, "example", ic_json_string(f, "example"), IC_JUNIT_NAME_CAP);
    const cJSON *pattern;
    cJSON_ArrayForEach(pattern, cJSON_GetObjectItemCaseSensitive(f, "cases"))
        ic_junit_line(out, "cases", cJSON_GetStringValue(pattern), IC_JUNIT_NAME_CAP);
    const char *script = ic_json_string(f, "reproducer");
    if (script) {
        ic_text_buf_adds(out, "reproducer:\n");
        ic_text_buf_add_escaped_str(out, script, IC_ESCAPE_XML_TEXT, 20000);
    }
    ic_text_buf_addf(out, "</%s>\n    </testcase>\n", element);
}

/* The findings suite's counts: a testcase per finding (one when there is none), an error for
 * a finding that crashed or hung. */
static void ic_junit_count_findings(struct ic_junit_counts *counts, const cJSON *report)
{
    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    const cJSON *f;
    int total = cJSON_GetArraySize(findings);
    counts->tests += total ? (size_t)total : 1;
    cJSON_ArrayForEach(f, findings)
    {
        const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(f, "outcomes");
        if (cJSON_GetObjectItemCaseSensitive(outcomes, "crash") ||
            cJSON_GetObjectItemCaseSensitive(outcomes, "timeout"))
            counts->errors++;
        else
            counts->failures++;
    }
}

static void ic_junit_findings(struct ic_text_buf *out, const cJSON *report, const char *timestamp)
{
    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    struct ic_junit_counts counts = {0};
    const cJSON *f;
    ic_junit_count_findings(&counts, report);
    ic_text_buf_addf(out,
                     "  <testsuite id=\"0\" name=\"interopcheck.findings\" tests=\"%zu\" "
                     "failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"0\"",
                     counts.tests, counts.failures, counts.errors);
    if (timestamp)
        ic_junit_attr(out, "timestamp", timestamp, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(out, ">\n");
    if (cJSON_GetArraySize(findings) == 0)
        ic_text_buf_adds(out, "    <testcase classname=\"interopcheck.findings\" "
                              "name=\"no findings\" time=\"0\"/>\n");
    cJSON_ArrayForEach(f, findings) ic_junit_finding(out, f);
    ic_text_buf_adds(out, "  </testsuite>\n");
}

int ic_junit_write(const cJSON *report, const char *path, bool per_case, bool with_unsupported,
                   char *err, size_t err_size)
{
    const cJSON *cases_json = cJSON_GetObjectItemCaseSensitive(report, "cases");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(report, "run");
    const cJSON *platform = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(report, "environment"), "platform");
    struct ic_junit_case *cases = NULL;
    struct ic_junit_suite *suites = NULL;
    struct ic_text_buf out;
    size_t ncases = 0, nsuites = 0;
    int rc = IC_ENOMEM;

    ic_text_buf_init(&out);
    if (!cJSON_IsArray(cases_json)) {
        snprintf(err, err_size, "the report has no cases to write as JUnit");
        return IC_EINVAL;
    }
    size_t total = (size_t)cJSON_GetArraySize(cases_json);
    cases = calloc(total ? total : 1, sizeof(*cases));
    suites = calloc(total ? total : 1, sizeof(*suites));
    if (!cases || !suites)
        goto nomem;

    const cJSON *c;
    cJSON_ArrayForEach(c, cases_json)
    {
        if (!with_unsupported && strcmp(ic_json_string_or(c, "outcome", ""), "unsupported") == 0)
            continue;
        struct ic_junit_case *jc = &cases[ncases];
        jc->json = c;
        jc->index = ncases++;
        jc->environment = ic_json_string_or(c, "environment", "");
        jc->protocol = ic_json_string_or(c, "protocol", "unknown");
        jc->producer = ic_json_string_or(c, "producer", "unknown");
        jc->consumer = ic_json_string_or(c, "consumer", "unknown");
    }
    /* Cases of a suite are contiguous in a report the tool wrote, but not in a merged or
     * edited one: sort by suite, then put suites in the order their first case came. */
    if (ncases)
        qsort(cases, ncases, sizeof(*cases), ic_junit_case_cmp);
    for (size_t i = 0; i < ncases; i++) {
        if (i == 0 || !ic_junit_same_suite(&cases[i - 1], &cases[i]))
            suites[nsuites++] = (struct ic_junit_suite){.first = i, .order = cases[i].index};
        suites[nsuites - 1].count++;
    }
    if (nsuites)
        qsort(suites, nsuites, sizeof(*suites), ic_junit_suite_cmp);

    struct ic_junit_counts counts = {0};
    for (size_t i = 0; i < ncases; i++)
        ic_junit_count(&counts, cases[i].json);
    const cJSON *duration = cJSON_GetObjectItemCaseSensitive(run, "duration_s");
    const char *timestamp = ic_json_string(run, "started");
    const char *hostname = ic_json_string(platform, "host");

    ic_text_buf_adds(
        &out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"interopcheck\"");
    /* The totals are the findings' suite's, plus the cases' when they are written. */
    struct ic_junit_counts root = {0};
    ic_junit_count_findings(&root, report);
    if (per_case) {
        root.tests += counts.tests;
        root.failures += counts.failures;
        root.errors += counts.errors;
        root.skipped += counts.skipped;
    }
    ic_junit_count_attrs(&out, &root,
                         cJSON_IsNumber(duration) ? duration->valuedouble : counts.seconds);
    if (timestamp)
        ic_junit_attr(&out, "timestamp", timestamp, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(&out, ">\n");
    ic_junit_findings(&out, report, timestamp);
    for (size_t s = 0; per_case && s < nsuites; s++)
        ic_junit_suite(&out, report, cases, &suites[s], s + 1, timestamp, hostname);
    ic_text_buf_adds(&out, "</testsuites>\n");
    if (out.status)
        goto nomem;
    rc = ic_text_write_atomic(path, out.data, out.len, err, err_size);
    goto done;

nomem:
    snprintf(err, err_size, "out of memory while writing %s", path);
    rc = IC_ENOMEM;
done:
    ic_text_buf_release(&out);
    free(cases);
    free(suites);
    return rc;
}
