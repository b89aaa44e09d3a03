#include "ic_report_markdown.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_cases.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_result.h"
#include "ic_text.h"

/* Caps on one piece of library text, in escaped bytes: a table row should stay readable, and
 * the full text is in the JSON report. */
#define IC_MD_DIAGNOSTIC_CAP 1000
#define IC_MD_FIELD_CAP      300
#define IC_MD_POINTER_CAP    1000

/* An outcome's mark: the outcome table's (ic_result.h), the same as the dashboard's. */
static const char *ic_md_mark(enum ic_outcome outcome)
{
    return ic_outcome_info(outcome)->mark;
}

static bool ic_str_is(const cJSON *object, const char *key, const char *value)
{
    const char *s = ic_json_string(object, key);
    return s ? strcmp(s, value) == 0 : value[0] == '\0';
}

static int ic_case_outcome(const cJSON *c)
{
    enum ic_outcome outcome;
    const char *name = ic_json_string(c, "outcome");
    if (!name || ic_outcome_from_name(name, &outcome) < 0)
        return IC_OUTCOME_ERROR;
    return (int)outcome;
}

static size_t ic_count_of(const cJSON *outcomes, enum ic_outcome outcome)
{
    const cJSON *item = ic_json_get(outcomes, ic_outcome_name(outcome));
    return ic_json_count(item);
}

static void ic_md_text(struct ic_text_buf *out, const char *text, size_t cap)
{
    ic_text_buf_add_escaped_str(out, text, IC_ESCAPE_MARKDOWN, cap);
}

/* A name or id the tool made ([a-z0-9_.-]) reads best as code; anything else is escaped. */
static void ic_md_code(struct ic_text_buf *out, const char *text)
{
    bool plain =
        text && text[0] && strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(text);
    if (plain && strlen(text) <= IC_MD_FIELD_CAP)
        ic_text_buf_addf(out, "`%s`", text);
    else
        ic_md_text(out, text ? text : "?", IC_MD_FIELD_CAP);
}

/* --- What the writer keeps and what the cap makes it leave out ------------------------------- */

struct ic_md_writer {
    struct ic_text_buf out;
    size_t limit;    /* where sections stop: max_bytes less the room for the closing line */
    bool cut;        /* a section did not fit: nothing more is added */
    size_t matrices; /* matrices, and those shown */
    size_t matrices_shown;
    size_t listed; /* cases listed (errors, unexpected passes), and those shown */
    size_t listed_shown;
    size_t findings; /* findings, and those shown */
    size_t findings_shown;
    bool environment_shown;
};

/* Appends `section` if the text stays within the limit; otherwise marks the writer cut. */
static bool ic_md_commit(struct ic_md_writer *w, const struct ic_text_buf *section)
{
    if (section->status) {
        w->out.status = section->status;
        return false;
    }
    if (w->cut || w->out.len + section->len > w->limit) {
        w->cut = true;
        return false;
    }
    ic_text_buf_add(&w->out, ic_text_buf_str(section), section->len);
    return true;
}

/* --- Totals and environment ------------------------------------------------------------------ */

static void ic_md_totals(struct ic_text_buf *out, const size_t counts[IC_OUTCOME_COUNT],
                         size_t total)
{
    size_t failing = ic_outcome_failures(counts);
    if (failing)
        ic_text_buf_addf(out, "## interopcheck: %s %zu of %zu cases failed\n\n",
                         ic_md_mark(IC_OUTCOME_FAIL), failing, total);
    else if (counts[IC_OUTCOME_ERROR])
        ic_text_buf_addf(out, "## interopcheck: %s %zu of %zu cases in error\n\n",
                         ic_md_mark(IC_OUTCOME_ERROR), counts[IC_OUTCOME_ERROR], total);
    else
        ic_text_buf_addf(out, "## interopcheck: %s no case of %zu failed\n\n",
                         ic_md_mark(IC_OUTCOME_PASS), total);
    ic_text_buf_addf(out, "**%zu cases:**", total);
    const char *sep = " ";
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        if (!counts[o])
            continue;
        ic_text_buf_addf(out, "%s%zu %s", sep, counts[o], ic_outcome_name((enum ic_outcome)o));
        sep = " \xC2\xB7 "; /* · */
    }
    ic_text_buf_adds(out, "\n\n");
}

/* One line on where a run happened: tool, Python, platform, time, and the libraries. */
static void ic_md_environment_line(struct ic_text_buf *out, const cJSON *scope)
{
    const cJSON *tool = ic_json_get(scope, "tool");
    const cJSON *run = ic_json_get(scope, "run");
    const cJSON *environment = ic_json_get(scope, "environment");
    const cJSON *platform = ic_json_get(environment, "platform");
    const cJSON *python = ic_json_get(environment, "python");
    const cJSON *duration = ic_json_get(run, "duration_s");
    const char *dot = " \xC2\xB7 ";

    ic_text_buf_adds(out, "interopcheck ");
    ic_md_text(out, ic_json_string_or(tool, "version", "?"), IC_MD_FIELD_CAP);
    ic_text_buf_adds(out, dot);
    ic_text_buf_adds(out, "Python ");
    ic_md_text(out, ic_json_string_or(python, "version", "?"), IC_MD_FIELD_CAP);
    if (cJSON_IsObject(platform)) {
        ic_text_buf_adds(out, dot);
        ic_md_text(out, ic_json_string_or(platform, "system", "?"), IC_MD_FIELD_CAP);
        ic_text_buf_adds(out, " ");
        ic_md_text(out, ic_json_string_or(platform, "machine", "?"), IC_MD_FIELD_CAP);
    }
    if (ic_json_string(run, "started")) {
        ic_text_buf_adds(out, dot);
        ic_text_buf_adds(out, "started ");
        ic_md_text(out, ic_json_string(run, "started"), IC_MD_FIELD_CAP);
    }
    if (cJSON_IsNumber(duration) && duration->valuedouble >= 0 && duration->valuedouble < 1e9)
        ic_text_buf_addf(out, "%sin %.0f s", dot, duration->valuedouble);
    if (ic_json_string(run, "seed")) {
        ic_text_buf_adds(out, dot);
        ic_text_buf_adds(out, "seed ");
        ic_md_text(out, ic_json_string(run, "seed"), IC_MD_FIELD_CAP);
    }
    ic_text_buf_adds(out, "<br>\nLibraries:");
    const cJSON *lib;
    const char *sep = " ";
    cJSON_ArrayForEach(lib, ic_json_get(environment, "libraries"))
    {
        const char *status = ic_json_string_or(lib, "status", "");
        if (strcmp(status, "not_loaded") == 0)
            continue; /* not part of this run */
        ic_text_buf_adds(out, sep);
        sep = dot;
        ic_md_text(out, ic_json_string_or(lib, "name", "?"), IC_MD_FIELD_CAP);
        ic_text_buf_adds(out, " ");
        if (strcmp(status, "loaded") == 0) {
            ic_md_text(out, ic_json_string_or(lib, "version", "?"), IC_MD_FIELD_CAP);
        } else {
            ic_text_buf_adds(out, "(");
            ic_md_text(out, status, IC_MD_FIELD_CAP);
            ic_text_buf_adds(out, ": ");
            ic_md_text(out, ic_json_string_or(lib, "error", "?"), IC_MD_FIELD_CAP);
            ic_text_buf_adds(out, ")");
        }
    }
    ic_text_buf_adds(out, "\n");
}

static void ic_md_environment(struct ic_md_writer *w, const cJSON *report)
{
    const cJSON *environments = ic_json_get(report, "environments");
    struct ic_text_buf section;
    ic_text_buf_init(&section);
    if (cJSON_IsArray(environments) && cJSON_GetArraySize(environments) > 0) {
        const cJSON *entry;
        cJSON_ArrayForEach(entry, environments)
        {
            ic_text_buf_adds(&section, "- ");
            ic_md_code(&section, ic_json_string_or(entry, "id", "?"));
            ic_text_buf_adds(&section, ": ");
            ic_md_environment_line(&section, entry);
        }
    } else {
        ic_md_environment_line(&section, report);
    }
    ic_text_buf_adds(&section, "\n");
    w->environment_shown = ic_md_commit(w, &section);
    ic_text_buf_release(&section);
}

/* --- Matrices -------------------------------------------------------------------------------- */

struct ic_md_names {
    const char **items;
    size_t count;
};

static void ic_md_names_add(struct ic_md_names *names, const char *name)
{
    for (size_t i = 0; i < names->count; i++) {
        if (strcmp(names->items[i], name) == 0)
            return;
    }
    names->items[names->count++] = name;
}

static const cJSON *ic_md_find_cell(const cJSON *cells, const char *environment, const char *device,
                                    const char *producer, const char *consumer)
{
    const cJSON *cell;
    cJSON_ArrayForEach(cell, cells)
    {
        if (ic_str_is(cell, "environment", environment) && ic_str_is(cell, "device", device) &&
            ic_str_is(cell, "producer", producer) && ic_str_is(cell, "consumer", consumer))
            return cell;
    }
    return NULL;
}

/* The marker of a cell: its most severe outcome's mark, except that a cell where some cases
 * pass and the rest are unsupported reads as passing. */
static const char *ic_md_marker(const size_t counts[IC_OUTCOME_COUNT])
{
    int worst = ic_outcome_worst(counts);
    if (worst < 0)
        return ic_md_mark(IC_OUTCOME_UNSUPPORTED);
    if (worst == IC_OUTCOME_UNSUPPORTED && (counts[IC_OUTCOME_PASS] || counts[IC_OUTCOME_XPASS]))
        return ic_md_mark(IC_OUTCOME_PASS);
    return ic_md_mark((enum ic_outcome)worst);
}

/* "✓ 90/90": the marker of the worst outcome, then passed (pass and xpass) of all cases. */
static void ic_md_cell(struct ic_text_buf *out, const cJSON *cell)
{
    const cJSON *outcomes = ic_json_get(cell, "outcomes");
    const cJSON *total_item = ic_json_get(cell, "total");
    size_t counts[IC_OUTCOME_COUNT], sum = 0;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        sum += counts[o] = ic_count_of(outcomes, (enum ic_outcome)o);
    size_t total = cJSON_IsNumber(total_item) ? ic_json_count(total_item) : sum;
    size_t passed = 0;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        passed += ic_outcome_info((enum ic_outcome)o)->passed ? counts[o] : 0;
    bool failing = ic_outcome_failures(counts) > 0;
    ic_text_buf_addf(out, failing ? " **%s %zu/%zu** |" : " %s %zu/%zu |", ic_md_marker(counts),
                     passed, total);
}

static void ic_md_matrix(struct ic_text_buf *out, const char *protocol, const cJSON *cells,
                         const char *environment, const char *device)
{
    size_t ncells = (size_t)cJSON_GetArraySize(cells);
    struct ic_md_names producers = {calloc(ncells, sizeof(char *)), 0};
    struct ic_md_names consumers = {calloc(ncells, sizeof(char *)), 0};
    const cJSON *cell;

    if (!producers.items || !consumers.items) {
        out->status = IC_ENOMEM;
        goto done;
    }
    cJSON_ArrayForEach(cell, cells)
    {
        if (!ic_str_is(cell, "environment", environment) || !ic_str_is(cell, "device", device))
            continue;
        const char *producer = ic_json_string(cell, "producer");
        const char *consumer = ic_json_string(cell, "consumer");
        if (producer && consumer) {
            ic_md_names_add(&producers, producer);
            ic_md_names_add(&consumers, consumer);
        }
    }
    ic_text_buf_adds(out, "### ");
    ic_md_text(out, protocol, IC_MD_FIELD_CAP);
    ic_text_buf_adds(out, " on ");
    ic_md_text(out, device, IC_MD_FIELD_CAP);
    if (environment[0]) {
        ic_text_buf_adds(out, " in ");
        ic_md_code(out, environment);
    }
    ic_text_buf_adds(out, "\n\n| producer \xE2\x86\x93 consumer \xE2\x86\x92 |");
    for (size_t c = 0; c < consumers.count; c++) {
        ic_text_buf_adds(out, " ");
        ic_md_text(out, consumers.items[c], IC_MD_FIELD_CAP);
        ic_text_buf_adds(out, " |");
    }
    ic_text_buf_adds(out, "\n|:--|");
    for (size_t c = 0; c < consumers.count; c++)
        ic_text_buf_adds(out, ":-:|");
    ic_text_buf_adds(out, "\n");
    for (size_t p = 0; p < producers.count; p++) {
        ic_text_buf_adds(out, "| **");
        ic_md_text(out, producers.items[p], IC_MD_FIELD_CAP);
        ic_text_buf_adds(out, "** |");
        for (size_t c = 0; c < consumers.count; c++) {
            const cJSON *found =
                ic_md_find_cell(cells, environment, device, producers.items[p], consumers.items[c]);
            if (found)
                ic_md_cell(out, found);
            else
                ic_text_buf_adds(out, " |");
        }
        ic_text_buf_adds(out, "\n");
    }
    ic_text_buf_adds(out, "\n");
done:
    free(producers.items);
    free(consumers.items);
}

/* A merged report's matrix of one protocol and device, side by side: a row per producer and
 * consumer pair, a column per environment, and a last column marking with "≠" the rows whose
 * cells differ between the environments (a pair without cases in one of them differs too).
 * Rows come in the order their pairs first appear. */
static void ic_md_matrix_side(struct ic_text_buf *out, const char *protocol, const cJSON *cells,
                              const cJSON *environments, const char *device)
{
    size_t ncells = (size_t)cJSON_GetArraySize(cells);
    const char **producers = calloc(ncells ? ncells : 1, sizeof(char *));
    const char **consumers = calloc(ncells ? ncells : 1, sizeof(char *));
    size_t npairs = 0, differing = 0;
    struct ic_text_buf rows, first, other;
    const cJSON *cell, *environment;

    ic_text_buf_init(&rows);
    ic_text_buf_init(&first);
    ic_text_buf_init(&other);
    if (!producers || !consumers) {
        out->status = IC_ENOMEM;
        goto done;
    }
    cJSON_ArrayForEach(cell, cells)
    {
        const char *producer = ic_json_string(cell, "producer");
        const char *consumer = ic_json_string(cell, "consumer");
        bool seen = !producer || !consumer || !ic_str_is(cell, "device", device);
        for (size_t i = 0; i < npairs && !seen; i++)
            seen = strcmp(producers[i], producer) == 0 && strcmp(consumers[i], consumer) == 0;
        if (!seen) {
            producers[npairs] = producer;
            consumers[npairs++] = consumer;
        }
    }
    for (size_t i = 0; i < npairs; i++) {
        bool differs = false, have_first = false;
        ic_text_buf_adds(&rows, "| **");
        ic_md_text(&rows, producers[i], IC_MD_FIELD_CAP);
        ic_text_buf_adds(&rows, "** \xE2\x86\x92 ");
        ic_md_text(&rows, consumers[i], IC_MD_FIELD_CAP);
        ic_text_buf_adds(&rows, " |");
        cJSON_ArrayForEach(environment, environments)
        {
            const cJSON *found = ic_md_find_cell(cells, ic_json_string_or(environment, "id", ""),
                                                 device, producers[i], consumers[i]);
            struct ic_text_buf *text = have_first ? &other : &first;
            ic_text_buf_truncate(text, 0);
            if (found)
                ic_md_cell(text, found);
            else
                ic_text_buf_adds(text, " |");
            differs = differs || (have_first && strcmp(first.data, other.data) != 0);
            have_first = true;
            ic_text_buf_adds(&rows, text->data);
        }
        ic_text_buf_adds(&rows, differs ? " \xE2\x89\xA0 |\n" : " |\n");
        differing += differs;
    }
    ic_text_buf_adds(out, "### ");
    ic_md_text(out, protocol, IC_MD_FIELD_CAP);
    ic_text_buf_adds(out, " on ");
    ic_md_text(out, device, IC_MD_FIELD_CAP);
    ic_text_buf_addf(out,
                     ", environment by environment\n\n%zu of %zu pairs differ between the "
                     "environments (marked \xE2\x89\xA0).\n\n| producer \xE2\x86\x92 consumer |",
                     differing, npairs);
    cJSON_ArrayForEach(environment, environments)
    {
        ic_text_buf_adds(out, " ");
        ic_md_code(out, ic_json_string_or(environment, "id", "?"));
        ic_text_buf_adds(out, " |");
    }
    ic_text_buf_adds(out, " |\n|:--|");
    cJSON_ArrayForEach(environment, environments) ic_text_buf_adds(out, ":-:|");
    ic_text_buf_addf(out, ":-:|\n%s\n", rows.data ? rows.data : "");
    if (rows.status < 0 || first.status < 0 || other.status < 0)
        out->status = IC_ENOMEM;
done:
    ic_text_buf_release(&rows);
    ic_text_buf_release(&first);
    ic_text_buf_release(&other);
    free(producers);
    free(consumers);
}

/* One matrix per protocol and device, each kept whole or left out: for a merged report of
 * several environments, their cells side by side (ic_md_matrix_side); else one environment's. */
static void ic_md_matrices(struct ic_md_writer *w, const cJSON *report)
{
    const cJSON *environments = ic_json_get(report, "environments");
    bool side_by_side = cJSON_IsArray(environments) && cJSON_GetArraySize(environments) > 1;
    const cJSON *protocols = ic_json_get(ic_json_get(report, "summary"), "protocols");
    const cJSON *protocol;
    struct ic_text_buf section, without;

    ic_text_buf_init(&section);
    ic_text_buf_init(&without);
    ic_text_buf_addf(&section,
                     "Each cell: a producer (row) and a consumer (column), passed/total cases. "
                     "%s nothing failed \xC2\xB7 %s a case failed, crashed or timed out \xC2\xB7 "
                     "%s an error of interopcheck or the environment \xC2\xB7 %s a case expected "
                     "to fail passed \xC2\xB7 %s only expected failures \xC2\xB7 %s every case "
                     "unsupported \xC2\xB7 blank: no cases (the full report says why).\n\n",
                     ic_md_mark(IC_OUTCOME_PASS), ic_md_mark(IC_OUTCOME_FAIL),
                     ic_md_mark(IC_OUTCOME_ERROR), ic_md_mark(IC_OUTCOME_XPASS),
                     ic_md_mark(IC_OUTCOME_XFAIL), ic_md_mark(IC_OUTCOME_UNSUPPORTED));
    ic_md_commit(w, &section);
    cJSON_ArrayForEach(protocol, protocols)
    {
        const cJSON *cells = ic_json_get(protocol, "cells");
        size_t ncells = (size_t)cJSON_GetArraySize(cells);
        if (ncells == 0) {
            ic_text_buf_adds(&without, without.len ? ", " : "No cases for ");
            ic_md_text(&without, protocol->string, IC_MD_FIELD_CAP);
            continue;
        }
        /* The (environment, device) pairs of the protocol, in the order their cells come. */
        const cJSON *cell;
        size_t index = 0;
        cJSON_ArrayForEach(cell, cells)
        {
            const char *environment = ic_json_string_or(cell, "environment", "");
            const char *device = ic_json_string_or(cell, "device", "?");
            bool seen = false;
            const cJSON *earlier = cells->child;
            for (size_t i = 0; i < index && !seen; i++, earlier = earlier->next)
                seen = (side_by_side || ic_str_is(earlier, "environment", environment)) &&
                       ic_str_is(earlier, "device", device);
            index++;
            if (seen)
                continue;
            w->matrices++;
            if (w->cut)
                continue;
            ic_text_buf_truncate(&section, 0);
            if (side_by_side)
                ic_md_matrix_side(&section, protocol->string, cells, environments, device);
            else
                ic_md_matrix(&section, protocol->string, cells, environment, device);
            if (ic_md_commit(w, &section))
                w->matrices_shown++;
        }
    }
    if (without.len) {
        ic_text_buf_adds(&without, ".\n\n");
        ic_md_commit(w, &without);
    }
    ic_text_buf_release(&section);
    ic_text_buf_release(&without);
}

/* --- Findings ------------------------------------------------------------------------------- */

/* A fence for a script: longer than any run of backticks inside it, so nothing in the script
 * can close the block early. */
static size_t ic_md_fence_len(const char *text)
{
    size_t longest = 0, run = 0;
    for (const char *p = text; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    return longest < 3 ? 3 : longest + 1;
}

static void ic_md_reproducer(struct ic_text_buf *out, const cJSON *finding)
{
    const char *script = ic_json_string(finding, "reproducer");
    if (!script)
        return;
    size_t fence = ic_md_fence_len(script);
    ic_text_buf_adds(out, "<details><summary>Reproducer of ");
    ic_md_code(out, ic_json_string_or(finding, "id", "?"));
    ic_text_buf_adds(out, "</summary>\n\n");
    for (size_t i = 0; i < fence; i++)
        ic_text_buf_adds(out, "`");
    ic_text_buf_adds(out, "python\n");
    ic_text_buf_add_escaped_str(out, script, IC_ESCAPE_PLAIN, 20000);
    if (script[0] && script[strlen(script) - 1] != '\n')
        ic_text_buf_adds(out, "\n");
    for (size_t i = 0; i < fence; i++)
        ic_text_buf_adds(out, "`");
    ic_text_buf_adds(out, "\n\n</details>\n\n");
}

/* A rule id, linked to its entry in the rules document when that is on the web. */
static void ic_md_rule(struct ic_text_buf *out, const cJSON *finding)
{
    const char *link = ic_json_string(finding, "rule_link");
    static const char url_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-._~:/?#@!$&'*+,;=%";
    bool web = link && strncmp(link, "https://", 8) == 0 &&
               strspn(link, url_chars) == strlen(link) && strlen(link) < 400;
    if (web)
        ic_text_buf_adds(out, "[");
    ic_md_code(out, ic_json_string_or(finding, "rule", "?"));
    if (web)
        ic_text_buf_addf(out, "](<%s>)", link);
}

/* The findings: one row per cause, most severe first; then the reproducers of the harmful
 * ones, folded, as far as the cap allows. */
static void ic_md_findings(struct ic_md_writer *w, const cJSON *report)
{
    const cJSON *findings = ic_json_get(report, "findings");
    int total = cJSON_GetArraySize(findings);
    struct ic_text_buf section;
    if (total == 0)
        return;
    ic_text_buf_init(&section);
    ic_text_buf_addf(&section,
                     "### Findings (%d)\n\nOne row per cause: the library at fault, the rule it "
                     "broke (see the rules document), and what was seen in its first case. "
                     "`interopcheck repro REPORT FINDING` prints a finding's reproducer.\n\n"
                     "| severity | cases | culprit | rule | finding | what was seen |\n"
                     "|---|---|---|---|---|---|\n",
                     total);
    w->findings = (size_t)total;
    if (ic_md_commit(w, &section)) {
        const cJSON *f;
        cJSON_ArrayForEach(f, findings)
        {
            ic_text_buf_truncate(&section, 0);
            ic_text_buf_adds(&section, "| ");
            ic_md_code(&section, ic_json_string_or(f, "severity", "?"));
            ic_text_buf_addf(&section, " | %.0f | ", cJSON_GetNumberValue(ic_json_get(f, "count")));
            ic_md_code(&section, ic_json_string_or(f, "culprit", "?"));
            ic_text_buf_adds(&section, " | ");
            ic_md_rule(&section, f);
            ic_text_buf_adds(&section, " | ");
            ic_md_code(&section, ic_json_string_or(f, "id", "?"));
            ic_text_buf_adds(&section, " | ");
            ic_md_text(&section, ic_json_string_or(f, "diagnostic", ""), IC_MD_FIELD_CAP);
            ic_text_buf_adds(&section, " |\n");
            if (!ic_md_commit(w, &section))
                break;
            w->findings_shown++;
        }
        ic_text_buf_adds(&w->out, "\n");
        cJSON_ArrayForEach(f, findings)
        {
            if (strcmp(ic_json_string_or(f, "severity", ""), "harmful") != 0)
                continue;
            ic_text_buf_truncate(&section, 0);
            ic_md_reproducer(&section, f);
            if (!ic_md_commit(w, &section))
                break;
        }
    }
    ic_text_buf_release(&section);
}

/* --- Cases to look at ------------------------------------------------------------------------ */

static void ic_md_case_row(struct ic_text_buf *out, const cJSON *c, bool merged)
{
    int outcome = ic_case_outcome(c);
    ic_text_buf_adds(out, "| ");
    ic_md_code(out, ic_json_string_or(c, "id", "?"));
    if (merged) {
        ic_text_buf_adds(out, " | ");
        ic_md_code(out, ic_json_string_or(c, "environment", "?"));
    }
    ic_text_buf_addf(out, " | %s | ", ic_outcome_name((enum ic_outcome)outcome));
    ic_md_text(out, ic_json_string(c, "rule"), IC_MD_FIELD_CAP);
    ic_text_buf_adds(out, " | ");
    if (outcome == IC_OUTCOME_XPASS) {
        const cJSON *expectation = ic_json_get(c, "expectation");
        ic_text_buf_adds(out, "passed, but expected to fail: ");
        ic_md_text(out, ic_json_string_or(expectation, "reason", "?"), IC_MD_FIELD_CAP);
        if (ic_json_string(expectation, "link")) {
            ic_text_buf_adds(out, " ");
            ic_md_text(out, ic_json_string(expectation, "link"), IC_MD_FIELD_CAP);
        }
    } else {
        ic_md_text(out, ic_json_string(c, "diagnostic"), IC_MD_DIAGNOSTIC_CAP);
    }
    ic_text_buf_adds(out, " |\n");
}

static bool ic_md_listed_in(int outcome, int group)
{
    switch (group) {
    case 0:
        return ic_outcome_is_failure((enum ic_outcome)outcome);
    case 1:
        return outcome == IC_OUTCOME_ERROR;
    default:
        return outcome == IC_OUTCOME_XPASS;
    }
}

/* The rows of one group of listed cases, kept from the pass over the cases until the group's
 * turn comes: only as many as could be shown (rows stop once they pass `max_bytes`, beyond
 * which nothing is committed), so what is kept stays under the cap too. */
struct ic_md_rows {
    struct ic_text_buf text; /* the rows, one after another */
    size_t *ends;            /* where each row ends in text */
    size_t count, cap;
    int status; /* 0, or IC_ENOMEM */
};

static void ic_md_rows_add(struct ic_md_rows *rows, const cJSON *c, bool merged, size_t max_bytes)
{
    if (rows->status || rows->text.len > max_bytes)
        return;
    size_t *ends = ic_grow(rows->ends, &rows->cap, rows->count, sizeof(*ends), 64);
    if (!ends) {
        rows->status = IC_ENOMEM;
        return;
    }
    rows->ends = ends;
    ic_md_case_row(&rows->text, c, merged);
    if (rows->text.status)
        rows->status = rows->text.status;
    ends[rows->count++] = rows->text.len;
}

static void ic_md_rows_release(struct ic_md_rows *rows)
{
    ic_text_buf_release(&rows->text);
    free(rows->ends);
}

/* The groups of listed cases, from what the pass over the cases kept (rows[1] errors, rows[2]
 * unexpected passes). */
static void ic_md_cases(struct ic_md_writer *w, const cJSON *report,
                        const size_t counts[IC_OUTCOME_COUNT], const struct ic_md_rows rows[3])
{
    static const char *const titles[] = {"Failures", "Errors (not charged to a library)",
                                         "Unexpected passes"};
    bool merged = cJSON_IsArray(ic_json_get(report, "environments"));
    struct ic_text_buf section;
    /* Failing cases are not listed one by one: the findings stand for them. */
    size_t in_group[3] = {0, counts[IC_OUTCOME_ERROR], counts[IC_OUTCOME_XPASS]};

    ic_text_buf_init(&section);
    for (int group = 0; group < 3; group++) {
        w->listed += in_group[group];
        if (!in_group[group] || w->cut)
            continue;
        ic_text_buf_truncate(&section, 0);
        ic_text_buf_addf(&section,
                         "### %s (%zu)\n\n| case |%s outcome | rule | diagnostic |\n"
                         "|---|%s---|---|---|\n",
                         titles[group], in_group[group], merged ? " environment |" : "",
                         merged ? "---|" : "");
        if (!ic_md_commit(w, &section))
            continue;
        const struct ic_md_rows *group_rows = &rows[group];
        for (size_t i = 0; i < group_rows->count; i++) {
            size_t start = i ? group_rows->ends[i - 1] : 0;
            ic_text_buf_truncate(&section, 0);
            ic_text_buf_add(&section, ic_text_buf_str(&group_rows->text) + start,
                            group_rows->ends[i] - start);
            if (!ic_md_commit(w, &section))
                break;
            w->listed_shown++;
        }
        ic_text_buf_adds(&w->out, "\n"); /* ends the table; the limit keeps room for it */
    }
    ic_text_buf_release(&section);
}

/* --- The closing line ------------------------------------------------------------------------ */

static void ic_md_pointer(struct ic_text_buf *out, const char *full_report)
{
    static const char url_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-._~:/?#[]@!$&'()*+,;=%";
    bool url =
        (strncmp(full_report, "https://", 8) == 0 || strncmp(full_report, "http://", 7) == 0) &&
        strspn(full_report, url_chars) == strlen(full_report) &&
        strlen(full_report) <= IC_MD_POINTER_CAP;
    if (url)
        ic_text_buf_addf(out, "[%s](<%s>)", "the full report", full_report);
    else
        ic_md_text(out, full_report, IC_MD_POINTER_CAP);
}

static void ic_md_closing(struct ic_text_buf *out, const struct ic_md_writer *w, size_t max_bytes,
                          const char *full_report)
{
    if (w->cut) {
        ic_text_buf_addf(out, "**Cut to stay within %zu bytes:** not shown here are", max_bytes);
        const char *sep = " ";
        if (!w->environment_shown) {
            ic_text_buf_addf(out, "%sthe environment", sep);
            sep = ", ";
        }
        if (w->matrices_shown < w->matrices) {
            ic_text_buf_addf(out, "%s%zu of %zu matrices", sep, w->matrices - w->matrices_shown,
                             w->matrices);
            sep = ", ";
        }
        if (w->findings_shown < w->findings) {
            ic_text_buf_addf(out, "%s%zu of %zu findings", sep, w->findings - w->findings_shown,
                             w->findings);
            sep = ", ";
        }
        ic_text_buf_addf(out, "%s%zu of %zu listed cases.", sep, w->listed - w->listed_shown,
                         w->listed);
        ic_text_buf_adds(out, full_report ? " Everything is in "
                                          : " Everything is in the JSON "
                                            "report.");
    } else if (full_report) {
        ic_text_buf_adds(out, "Every case, check and diagnostic: ");
    }
    if (full_report) {
        ic_md_pointer(out, full_report);
        ic_text_buf_adds(out, ".");
    }
    if (w->cut || full_report)
        ic_text_buf_adds(out, "\n");
}

int ic_markdown_write(const cJSON *report, struct ic_cases *cases, const char *path,
                      size_t max_bytes, const char *full_report, char *err, size_t err_size)
{
    bool merged = cJSON_IsArray(ic_json_get(report, "environments"));
    struct ic_md_writer w = {0};
    struct ic_text_buf closing;
    struct ic_md_rows rows[3] = {0};
    size_t counts[IC_OUTCOME_COUNT] = {0};
    size_t total = 0;
    int rc;

    if (!cases) {
        snprintf(err, err_size, "the report has no cases to summarize in Markdown");
        return IC_EINVAL;
    }
    /* One pass over the cases: the counts, and the rows of the cases listed one by one. */
    for (int group = 0; group < 3; group++)
        ic_text_buf_init(&rows[group].text);
    const cJSON *c;
    ic_cases_for_each(c, cases)
    {
        int outcome = ic_case_outcome(c);
        counts[outcome]++;
        total++;
        for (int group = 1; group < 3; group++) {
            if (ic_md_listed_in(outcome, group))
                ic_md_rows_add(&rows[group], c, merged, max_bytes);
        }
    }
    if (ic_cases_status(cases) < 0) {
        rc = ic_cases_status(cases);
        snprintf(err, err_size, "cannot read the report's cases to write %s: %s", path,
                 ic_strerror(rc));
        for (int group = 0; group < 3; group++)
            ic_md_rows_release(&rows[group]);
        return rc;
    }
    ic_text_buf_init(&w.out);
    ic_text_buf_init(&closing);

    /* Room for the closing line, measured with every count at its largest. */
    struct ic_md_writer worst = {
        .cut = true, .matrices = SIZE_MAX, .listed = SIZE_MAX, .findings = SIZE_MAX};
    ic_md_closing(&closing, &worst, max_bytes, full_report);
    size_t reserve = closing.len + 8; /* and the newlines that end the last table */

    ic_md_totals(&w.out, counts, total);
    if (w.out.status)
        goto nomem;
    if (w.out.len + reserve > max_bytes) {
        snprintf(err, err_size, "a Markdown summary of %zu bytes cannot hold even the totals",
                 max_bytes);
        rc = IC_ERANGE;
        goto done;
    }
    w.limit = max_bytes - reserve;
    ic_md_findings(&w, report);
    ic_md_environment(&w, report);
    ic_md_matrices(&w, report);
    ic_md_cases(&w, report, counts, rows);
    ic_text_buf_truncate(&closing, 0);
    ic_md_closing(&closing, &w, max_bytes, full_report);
    ic_text_buf_add(&w.out, ic_text_buf_str(&closing), closing.len);
    if (w.out.status || closing.status || rows[1].status || rows[2].status)
        goto nomem;
    rc = ic_text_write_atomic(path, w.out.data, w.out.len, err, err_size);
    goto done;

nomem:
    snprintf(err, err_size, "out of memory while writing %s", path);
    rc = IC_ENOMEM;
done:
    ic_text_buf_release(&w.out);
    ic_text_buf_release(&closing);
    for (int group = 0; group < 3; group++)
        ic_md_rows_release(&rows[group]);
    return rc;
}
