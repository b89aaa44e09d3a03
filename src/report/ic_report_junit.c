#include "ic_report_junit.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_cases.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_result.h"
#include "ic_strtab.h"
#include "ic_text.h"

/* Caps on library text, in escaped bytes. A message attribute is what CI pages show in a
 * list, so it stays short; the element body is the detail a person opens. Diagnostics are at
 * most IC_DIAGNOSTIC_MAX bytes in a report the tool wrote, but a merged or edited report may
 * hold anything. */
#define IC_JUNIT_MESSAGE_CAP 1000
#define IC_JUNIT_FIELD_CAP   8000
#define IC_JUNIT_NOTE_CAP    2000
#define IC_JUNIT_NAME_CAP    300

struct ic_junit_counts {
    size_t tests, failures, errors, skipped;
    double seconds;
};

/* One <testsuite>: the cases of one environment, protocol and producer/consumer pair. Suites
 * are numbered in the order their first case comes in the report, which is the order they are
 * written in. */
struct ic_junit_suite {
    char *key; /* "environment\0protocol\0producer\0consumer\0" ("" outside a merged report) */
    const char *environment, *protocol, *producer, *consumer; /* into key */
    size_t first; /* its first case in the sorted order (ic_junit_sort) */
    size_t cases;
    struct ic_junit_counts counts; /* seconds summed in report order, as the suite lists them */
};

/* What the writer keeps of one case it writes, in report order: which suite, where its
 * <testcase> text lies in the temporary file, and its seconds. */
struct ic_junit_record {
    uint64_t offset;
    double seconds;
    uint32_t suite;
    uint32_t length;
};

/* Everything the writer holds between its pass over the cases and the document. */
struct ic_junit_state {
    const cJSON *report;
    bool per_case;
    const char *timestamp, *hostname;
    double root_seconds; /* the run's duration, or the cases' seconds */
    struct ic_junit_suite *suites;
    size_t nsuites, suites_cap;
    struct ic_strtab keys; /* each suite's key (ic_junit_intern), at the suite's index */
    struct ic_junit_record *records;
    size_t nrecords, records_cap;
    uint32_t *order; /* records sorted by suite, then report order */
    FILE *tmp;       /* the <testcase> texts, one after another, in report order */
    uint64_t tmp_len;
    int tmp_errno; /* why reading the temporary file back failed */
    struct ic_junit_counts root;
};

static int ic_case_outcome(const cJSON *c)
{
    enum ic_outcome outcome;
    const char *name = ic_json_string(c, "outcome");
    if (!name || ic_outcome_from_name(name, &outcome) < 0)
        return IC_OUTCOME_ERROR; /* a case the writer cannot read is not a pass */
    return (int)outcome;
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
    const cJSON *ms = ic_json_get(c, "duration_ms");
    return cJSON_IsNumber(ms) ? ms->valuedouble / 1000.0 : 0.0;
}

/* name="value" with the value escaped for an attribute. */
static void ic_junit_attr(struct ic_text_buf *out, const char *name, const char *value, size_t cap)
{
    ic_text_buf_addf(out, " %s=\"", name);
    ic_text_buf_add_escaped_str(out, value, IC_ESCAPE_XML_ATTR, cap);
    ic_text_buf_adds(out, "\"");
}

/* The element a case's testcase holds: the outcome table's junit column. */
static const char *ic_junit_element(int outcome)
{
    const struct ic_outcome_info *info = ic_outcome_info((enum ic_outcome)outcome);
    return info ? info->junit : "error";
}

static void ic_junit_count(struct ic_junit_counts *counts, int outcome, double seconds)
{
    const char *element = ic_junit_element(outcome);
    counts->tests++;
    if (strcmp(element, "failure") == 0)
        counts->failures++;
    else if (strcmp(element, "error") == 0)
        counts->errors++;
    else if (strcmp(element, "skipped") == 0)
        counts->skipped++;
    counts->seconds += seconds;
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
    cJSON_ArrayForEach(entry, ic_json_get(report, "environments"))
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
    cJSON_ArrayForEach(lib, ic_json_get(environment, "libraries"))
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
                                const struct ic_junit_suite *first)
{
    const cJSON *scope = ic_junit_environment_of(report, first->environment);
    const cJSON *tool = ic_json_get(scope, "tool");
    const cJSON *run = ic_json_get(scope, "run");
    const cJSON *environment = ic_json_get(scope, "environment");
    const cJSON *build = ic_json_get(tool, "build");
    const cJSON *platform = ic_json_get(environment, "platform");
    char platform_text[400];
    char key[IC_JUNIT_NAME_CAP];

    ic_text_buf_adds(out, "    <properties>\n");
    if (first->environment[0])
        ic_junit_property(out, "environment", first->environment);
    ic_junit_property(out, "interopcheck.version", ic_json_string(tool, "version"));
    ic_junit_property(out, "interopcheck.dlpack_header",
                      ic_json_string(build, "dlpack_header_version"));
    ic_junit_property(out, "python.version",
                      ic_json_string(ic_json_get(environment, "python"), "version"));
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
    const cJSON *expectation = ic_json_get(c, "expectation");
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
    const cJSON *checks = ic_json_get(c, "checks");
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

static void ic_junit_testcase(struct ic_text_buf *out, const cJSON *c, const char *classname)
{
    int outcome = ic_case_outcome(c);
    const char *outcome_name = ic_outcome_name((enum ic_outcome)outcome);
    const char *diagnostic = ic_json_string(c, "diagnostic");
    const char *rule = ic_json_string(c, "rule");
    const cJSON *expectation = ic_json_get(c, "expectation");
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

/* "interopcheck.[<environment>.]<protocol>.<producer>.<consumer>": a suite's name and its
 * testcases' classname. */
static void ic_junit_classname(char *classname, size_t size, const char *environment,
                               const char *protocol, const char *producer, const char *consumer)
{
    snprintf(classname, size, "interopcheck.%s%s%s.%s.%s", environment, environment[0] ? "." : "",
             protocol, producer, consumer);
}

/* A suite's opening tag and properties; its testcases follow from the temporary file. */
static void ic_junit_suite_head(struct ic_text_buf *out, const cJSON *report,
                                const struct ic_junit_suite *suite, size_t suite_index,
                                const char *timestamp, const char *hostname)
{
    char classname[IC_JUNIT_NAME_CAP];
    ic_junit_classname(classname, sizeof(classname), suite->environment, suite->protocol,
                       suite->producer, suite->consumer);

    ic_text_buf_addf(out, "  <testsuite id=\"%zu\"", suite_index);
    ic_junit_attr(out, "name", classname, IC_JUNIT_NAME_CAP);
    ic_junit_count_attrs(out, &suite->counts, suite->counts.seconds);
    if (timestamp)
        ic_junit_attr(out, "timestamp", timestamp, IC_JUNIT_NAME_CAP);
    if (hostname)
        ic_junit_attr(out, "hostname", hostname, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(out, ">\n");
    ic_junit_properties(out, report, suite);
}

/* One testcase per finding: a finding that crashed or hung is an <error>, any other a
 * <failure> whose type is its rule; the body holds its cases, example and reproducer. */
static void ic_junit_finding(struct ic_text_buf *out, const cJSON *f)
{
    const cJSON *outcomes = ic_json_get(f, "outcomes");
    bool broke = ic_json_get(outcomes, "crash") || ic_json_get(outcomes, "timeout");
    const char *element = broke ? "error" : "failure";
    char classname[IC_JUNIT_NAME_CAP], prefix[160];
    snprintf(classname, sizeof(classname), "interopcheck.findings.%s",
             ic_json_string_or(f, "culprit", "unknown"));
    snprintf(prefix, sizeof(prefix), "%s, %.0f cases", ic_json_string_or(f, "severity", "?"),
             cJSON_GetNumberValue(ic_json_get(f, "count")));

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
    cJSON_ArrayForEach(pattern, ic_json_get(f, "cases"))
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
    const cJSON *findings = ic_json_get(report, "findings");
    const cJSON *f;
    int total = cJSON_GetArraySize(findings);
    counts->tests += total ? (size_t)total : 1;
    cJSON_ArrayForEach(f, findings)
    {
        const cJSON *outcomes = ic_json_get(f, "outcomes");
        if (ic_json_get(outcomes, "crash") || ic_json_get(outcomes, "timeout"))
            counts->errors++;
        else
            counts->failures++;
    }
}

static void ic_junit_findings(struct ic_text_buf *out, const cJSON *report, const char *timestamp)
{
    const cJSON *findings = ic_json_get(report, "findings");
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

/* The suite of (environment, protocol, producer, consumer): its index in st->suites, a new
 * suite when none had that key yet (so suites are numbered in the order of their first case).
 * The key spells each part with its length first, so that no two different part lists make
 * the same key, whatever characters a merged or edited report's names hold. */
static int ic_junit_intern(struct ic_junit_state *st, const char *const parts[4], uint32_t *ret)
{
    size_t lengths[4], total = 0;
    for (int i = 0; i < 4; i++)
        total += (lengths[i] = strlen(parts[i])) + 24;
    char *key = malloc(total + 1);
    if (!key)
        return IC_ENOMEM;
    size_t used = 0;
    for (int i = 0; i < 4; i++)
        used += (size_t)snprintf(key + used, total + 1 - used, "%zu:%s", lengths[i], parts[i]);
    size_t index = ic_strtab_intern(&st->keys, key);
    free(key);
    if (st->keys.status)
        return st->keys.status;
    if (index > UINT32_MAX - 1)
        return IC_ERANGE;
    *ret = (uint32_t)index;
    if (index < st->nsuites)
        return 0;
    struct ic_junit_suite *suites =
        ic_grow(st->suites, &st->suites_cap, st->nsuites, sizeof(*suites), 16);
    if (!suites)
        return IC_ENOMEM;
    st->suites = suites;
    size_t sizes[4], whole = 0;
    for (int i = 0; i < 4; i++)
        whole += sizes[i] = lengths[i] + 1;
    char *copy = malloc(whole);
    if (!copy)
        return IC_ENOMEM;
    const char *fields[4];
    for (size_t i = 0, at = 0; i < 4; at += sizes[i++]) {
        memcpy(copy + at, parts[i], sizes[i]);
        fields[i] = copy + at;
    }
    suites[st->nsuites++] = (struct ic_junit_suite){.key = copy,
                                                    .environment = fields[0],
                                                    .protocol = fields[1],
                                                    .producer = fields[2],
                                                    .consumer = fields[3]};
    return 0;
}

/* One case of the pass: its suite and counts, and with per_case its <testcase> text appended
 * to the temporary file (`text` is scratch). */
static int ic_junit_keep(struct ic_junit_state *st, const cJSON *c, struct ic_text_buf *text)
{
    const char *parts[4] = {
        ic_json_string_or(c, "environment", ""), ic_json_string_or(c, "protocol", "unknown"),
        ic_json_string_or(c, "producer", "unknown"), ic_json_string_or(c, "consumer", "unknown")};
    uint32_t suite = 0;
    int rc = ic_junit_intern(st, parts, &suite);
    if (rc < 0)
        return rc;
    if (st->nrecords >= UINT32_MAX)
        return IC_ERANGE;
    struct ic_junit_record *records =
        ic_grow(st->records, &st->records_cap, st->nrecords, sizeof(*records), 1024);
    if (!records)
        return IC_ENOMEM;
    st->records = records;

    double seconds = ic_case_seconds(c);
    struct ic_junit_record *record = &records[st->nrecords];
    *record = (struct ic_junit_record){.offset = st->tmp_len, .seconds = seconds, .suite = suite};
    ic_junit_count(&st->suites[suite].counts, ic_case_outcome(c), seconds);
    st->suites[suite].cases++;
    st->nrecords++;
    if (!st->per_case)
        return 0;

    char classname[IC_JUNIT_NAME_CAP];
    ic_junit_classname(classname, sizeof(classname), parts[0], parts[1], parts[2], parts[3]);
    ic_text_buf_truncate(text, 0);
    ic_junit_testcase(text, c, classname);
    if (text->status)
        return text->status;
    if (text->len > UINT32_MAX)
        return IC_ERANGE;
    if (fwrite(ic_text_buf_str(text), 1, text->len, st->tmp) != text->len)
        return IC_EIO;
    record->length = (uint32_t)text->len;
    st->tmp_len += text->len;
    return 0;
}

/* Sorts the records by suite (suites in the order of their first case), then report order,
 * into st->order: a counting sort, so stable and linear. */
static int ic_junit_sort(struct ic_junit_state *st)
{
    size_t *next = calloc(st->nsuites ? st->nsuites : 1, sizeof(*next));
    st->order = malloc((st->nrecords ? st->nrecords : 1) * sizeof(*st->order));
    if (!next || !st->order) {
        free(next);
        return IC_ENOMEM;
    }
    for (size_t s = 0, at = 0; s < st->nsuites; at += st->suites[s++].cases)
        next[s] = st->suites[s].first = at;
    for (size_t i = 0; i < st->nrecords; i++)
        st->order[next[st->records[i].suite]++] = (uint32_t)i;
    free(next);
    return 0;
}

static int ic_junit_key_cmp(const void *a, const void *b)
{
    const struct ic_junit_suite *x = *(const struct ic_junit_suite *const *)a;
    const struct ic_junit_suite *y = *(const struct ic_junit_suite *const *)b;
    int d = strcmp(x->environment, y->environment);
    if (!d)
        d = strcmp(x->protocol, y->protocol);
    if (!d)
        d = strcmp(x->producer, y->producer);
    if (!d)
        d = strcmp(x->consumer, y->consumer);
    return d;
}

/* The cases' seconds, summed as the tool always summed them: suites in the order of their
 * keys, each suite's cases in report order (a sum of doubles depends on its order). */
static int ic_junit_cases_seconds(const struct ic_junit_state *st, double *ret)
{
    const struct ic_junit_suite **by_key =
        malloc((st->nsuites ? st->nsuites : 1) * sizeof(*by_key));
    if (!by_key)
        return IC_ENOMEM;
    for (size_t s = 0; s < st->nsuites; s++)
        by_key[s] = &st->suites[s];
    if (st->nsuites)
        qsort(by_key, st->nsuites, sizeof(*by_key), ic_junit_key_cmp);
    double seconds = 0;
    for (size_t s = 0; s < st->nsuites; s++) {
        for (size_t k = 0; k < by_key[s]->cases; k++)
            seconds += st->records[st->order[by_key[s]->first + k]].seconds;
    }
    free(by_key);
    *ret = seconds;
    return 0;
}

/* Writes what `out` holds to `file` and empties it. */
static int ic_junit_flush(struct ic_text_buf *out, FILE *file)
{
    if (out->status)
        return out->status;
    if (out->len && fwrite(ic_text_buf_str(out), 1, out->len, file) != out->len)
        return IC_EIO;
    ic_text_buf_truncate(out, 0);
    return 0;
}

/* Copies the bytes [offset, offset + length) of the temporary file to `file`. */
static int ic_junit_copy(struct ic_junit_state *st, FILE *file, uint64_t *at, uint64_t offset,
                         size_t length)
{
    char chunk[32768];
    if (*at != offset) {
        if (fseeko(st->tmp, (off_t)offset, SEEK_SET) != 0)
            goto unreadable;
        *at = offset;
    }
    while (length) {
        size_t n = length < sizeof(chunk) ? length : sizeof(chunk);
        if (fread(chunk, 1, n, st->tmp) != n)
            goto unreadable;
        if (fwrite(chunk, 1, n, file) != n)
            return IC_EIO;
        length -= n;
        *at += n;
    }
    return 0;
unreadable:
    st->tmp_errno = errno ? errno : EIO;
    return IC_EIO;
}

/* The document, for ic_text_write_atomic_with. */
static int ic_junit_document(FILE *file, void *context)
{
    struct ic_junit_state *st = context;
    struct ic_text_buf out;
    uint64_t at = UINT64_MAX; /* where the temporary file is read next: unknown */
    int rc;

    ic_text_buf_init(&out);
    ic_text_buf_adds(
        &out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"interopcheck\"");
    ic_junit_count_attrs(&out, &st->root, st->root_seconds);
    if (st->timestamp)
        ic_junit_attr(&out, "timestamp", st->timestamp, IC_JUNIT_NAME_CAP);
    ic_text_buf_adds(&out, ">\n");
    ic_junit_findings(&out, st->report, st->timestamp);
    rc = ic_junit_flush(&out, file);
    for (size_t s = 0; rc == 0 && st->per_case && s < st->nsuites; s++) {
        const struct ic_junit_suite *suite = &st->suites[s];
        ic_junit_suite_head(&out, st->report, suite, s + 1, st->timestamp, st->hostname);
        rc = ic_junit_flush(&out, file);
        for (size_t k = 0; rc == 0 && k < suite->cases; k++) {
            const struct ic_junit_record *record = &st->records[st->order[suite->first + k]];
            rc = ic_junit_copy(st, file, &at, record->offset, record->length);
        }
        if (rc == 0) {
            ic_text_buf_adds(&out, "  </testsuite>\n");
            rc = ic_junit_flush(&out, file);
        }
    }
    if (rc == 0) {
        ic_text_buf_adds(&out, "</testsuites>\n");
        rc = ic_junit_flush(&out, file);
    }
    ic_text_buf_release(&out);
    return rc;
}

int ic_junit_write(const cJSON *report, struct ic_cases *cases, const char *path, bool per_case,
                   bool with_unsupported, char *err, size_t err_size)
{
    const cJSON *run = ic_json_get(report, "run");
    const cJSON *platform = ic_json_get(ic_json_get(report, "environment"), "platform");
    const cJSON *duration = ic_json_get(run, "duration_s");
    struct ic_junit_state st = {.report = report,
                                .per_case = per_case,
                                .timestamp = ic_json_string(run, "started"),
                                .hostname = ic_json_string(platform, "host")};
    struct ic_text_buf text;
    int rc = 0;

    ic_text_buf_init(&text);
    if (!cases) {
        snprintf(err, err_size, "the report has no cases to write as JUnit");
        return IC_EINVAL;
    }
    /* One pass over the cases, when anything of them is written: the testcases, or the cases'
     * seconds standing in for a run without a duration. */
    bool pass = per_case || !cJSON_IsNumber(duration);
    if (pass && per_case && !(st.tmp = tmpfile())) {
        snprintf(err, err_size, "cannot create a temporary file to write %s: %s", path,
                 strerror(errno));
        return IC_EIO;
    }
    if (pass) {
        const cJSON *c;
        ic_cases_for_each(c, cases)
        {
            if (!with_unsupported &&
                strcmp(ic_json_string_or(c, "outcome", ""), "unsupported") == 0)
                continue;
            if ((rc = ic_junit_keep(&st, c, &text)) < 0)
                break;
        }
        if (rc == 0 && ic_cases_status(cases) < 0) {
            rc = ic_cases_status(cases);
            snprintf(err, err_size, "cannot read the report's cases to write %s: %s", path,
                     ic_strerror(rc));
            goto done;
        }
        if (rc == 0 && st.tmp && (fflush(st.tmp) != 0 || ferror(st.tmp)))
            rc = IC_EIO;
        if (rc == IC_EIO) {
            snprintf(err, err_size, "cannot write a temporary file to write %s: %s", path,
                     strerror(errno ? errno : EIO));
            goto done;
        }
        if (rc == 0)
            rc = ic_junit_sort(&st);
    }

    /* The totals are the findings' suite's, plus the cases' when they are written; the time
     * is the run's, else the cases' own. */
    ic_junit_count_findings(&st.root, report);
    for (size_t s = 0; per_case && s < st.nsuites; s++) {
        st.root.tests += st.suites[s].counts.tests;
        st.root.failures += st.suites[s].counts.failures;
        st.root.errors += st.suites[s].counts.errors;
        st.root.skipped += st.suites[s].counts.skipped;
    }
    if (rc == 0 && cJSON_IsNumber(duration))
        st.root_seconds = duration->valuedouble;
    else if (rc == 0)
        rc = ic_junit_cases_seconds(&st, &st.root_seconds);
    if (rc == IC_ERANGE) {
        snprintf(err, err_size, "too many cases or too long a testcase to write %s", path);
        goto done;
    }
    if (rc < 0) {
        snprintf(err, err_size, "out of memory while writing %s", path);
        goto done;
    }
    rc = ic_text_write_atomic_with(path, ic_junit_document, &st, err, err_size);
    if (rc < 0 && st.tmp_errno)
        snprintf(err, err_size, "cannot read back the temporary file while writing %s: %s", path,
                 strerror(st.tmp_errno));

done:
    ic_text_buf_release(&text);
    if (st.tmp)
        fclose(st.tmp);
    for (size_t s = 0; s < st.nsuites; s++)
        free(st.suites[s].key);
    free(st.suites);
    ic_strtab_release(&st.keys);
    free(st.records);
    free(st.order);
    return rc;
}
