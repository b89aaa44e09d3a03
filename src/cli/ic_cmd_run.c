#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ic_cases_relay.h"
#include "ic_commands.h"
#include "ic_config.h"
#include "ic_early.h"
#include "ic_error.h"
#include "ic_expect.h"
#include "ic_findings.h"
#include "ic_ledger.h"
#include "ic_outputs.h"
#include "ic_plan.h"
#include "ic_plan_cases.h"
#include "ic_report.h"
#include "ic_resume.h"
#include "ic_run_ledger.h"
#include "ic_session.h"
#include "ic_stream.h"
#include "ic_views.h"
#include "ic_json.h"
#include "ic_supervisor.h"
#include "ic_text.h"
#include "ic_worker.h"

struct ic_run {
    struct ic_session *session;
    struct ic_plan *plan;
    size_t *run_index; /* pool case index -> plan index */
    struct ic_stream stream;
    bool stream_ok;
    size_t done;
    size_t counts[IC_OUTCOME_COUNT];
    double started; /* ic_wall_s */
};

static void ic_utc_now(char *buf, size_t size, const char *format)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, size, format, &tm);
}

/* --- Filters -------------------------------------------------------------------------------- */

static int ic_filter_libraries(const struct ic_catalog *catalog, const struct ic_name_list *names,
                               bool allow_reference, struct ic_libset *ret_set, bool *ret_reference,
                               const char *option, char *err, size_t err_size)
{
    if (names->count == 0)
        return 0;
    ic_libset_clear(ret_set);
    if (ret_reference)
        *ret_reference = false;
    for (int i = 0; i < names->count; i++) {
        if (allow_reference && strcmp(names->items[i], IC_REFERENCE_CONSUMER) == 0) {
            *ret_reference = true;
            continue;
        }
        int index = ic_catalog_find(catalog, names->items[i]);
        if (index < 0) {
            size_t used = (size_t)snprintf(err, err_size, "%s: no probe named '%s'; known:", option,
                                           names->items[i]);
            for (int j = 0; j < catalog->count && used < err_size; j++)
                used += (size_t)snprintf(err + used, err_size - used, " %s", catalog->libs[j].name);
            if (allow_reference && used < err_size)
                snprintf(err + used, err_size - used, " %s", IC_REFERENCE_CONSUMER);
            return IC_EUSAGE;
        }
        if (ic_libset_add(ret_set, index) < 0) {
            snprintf(err, err_size, "out of memory");
            return IC_ENOMEM;
        }
    }
    return 0;
}

/* One filterable dimension: parses a name to its value, and names the values [first, end). */
struct ic_dimension {
    const char *option;
    int (*lookup)(const char *name, int *ret);
    const char *(*name_of)(int value);
    int first, end;
};

static int ic_filter_names(const struct ic_name_list *names, const struct ic_dimension *dim,
                           uint32_t *ret_set, char *err, size_t err_size)
{
    if (names->count == 0)
        return 0;
    *ret_set = 0;
    for (int i = 0; i < names->count; i++) {
        int value;
        if (dim->lookup(names->items[i], &value) < 0) {
            size_t used = (size_t)snprintf(
                err, err_size, "%s: unknown value '%s'; valid:", dim->option, names->items[i]);
            for (int v = dim->first; v < dim->end && used < err_size; v++)
                used += (size_t)snprintf(err + used, err_size - used, " %s", dim->name_of(v));
            return IC_EUSAGE;
        }
        *ret_set |= 1u << value;
    }
    return 0;
}

#define IC_DIMENSION_FUNCTIONS(kind, type, from_name, to_name)                                     \
    static int ic_lookup_##kind(const char *name, int *ret)                                        \
    {                                                                                              \
        type value;                                                                                \
        int rc = from_name(name, &value);                                                          \
        *ret = (int)value;                                                                         \
        return rc;                                                                                 \
    }                                                                                              \
    static const char *ic_name_of_##kind(int value)                                                \
    {                                                                                              \
        return to_name((type)value);                                                               \
    }

IC_DIMENSION_FUNCTIONS(protocol, enum ic_protocol, ic_protocol_from_id, ic_protocol_id)
IC_DIMENSION_FUNCTIONS(dtype, enum ic_dtype, ic_dtype_from_name, ic_dtype_name)
IC_DIMENSION_FUNCTIONS(layout, enum ic_layout, ic_layout_from_name, ic_layout_name)
IC_DIMENSION_FUNCTIONS(device, enum ic_device_kind, ic_device_kind_from_name, ic_device_kind_name)

static const struct ic_dimension ic_protocols = {"--protocol", ic_lookup_protocol,
                                                 ic_name_of_protocol, 0, IC_PROTOCOL_COUNT};
static const struct ic_dimension ic_dtypes = {"--dtype", ic_lookup_dtype, ic_name_of_dtype,
                                              IC_DTYPE_FIRST, IC_DTYPE_END};
static const struct ic_dimension ic_layouts = {"--layout", ic_lookup_layout, ic_name_of_layout, 0,
                                               IC_LAYOUT_COUNT};
static const struct ic_dimension ic_devices = {"--device", ic_lookup_device, ic_name_of_device, 0,
                                               IC_KIND_COUNT};

static int ic_build_filter(const struct ic_options *opts, const struct ic_catalog *catalog,
                           struct ic_filter *filter, char *err, size_t err_size)
{
    ic_filter_all(filter);
    if (ic_filter_libraries(catalog, &opts->producers, false, &filter->producers, NULL,
                            "--producer", err, err_size) < 0 ||
        ic_filter_libraries(catalog, &opts->consumers, true, &filter->consumers,
                            &filter->reference_consumer, "--consumer", err, err_size) < 0 ||
        ic_filter_names(&opts->protocols, &ic_protocols, &filter->protocols, err, err_size) < 0 ||
        ic_filter_names(&opts->dtypes, &ic_dtypes, &filter->dtypes, err, err_size) < 0 ||
        ic_filter_names(&opts->layouts, &ic_layouts, &filter->layouts, err, err_size) < 0 ||
        ic_filter_names(&opts->devices, &ic_devices, &filter->devices, err, err_size) < 0)
        return IC_EUSAGE;
    return 0;
}

/* --- Progress and results ------------------------------------------------------------------- */

static void ic_print_progress(struct ic_run *run, const struct ic_case *c, bool force)
{
    if (!ic_session_status_due(run->session, force))
        return; /* called once a case: nothing is formatted between two lines */
    size_t failures = ic_outcome_failures(run->counts);
    char current[2 * IC_NAME_MAX + 40] = ""; /* the case that just ended */
    if (c)
        snprintf(current, sizeof(current), "  %s %s -> %s", ic_protocol_id(c->protocol),
                 c->producer, c->consumer);
    ic_session_status(run->session, force,
                      "[%zu/%zu] %zu failed, %zu unsupported, %zu errors, %.0f s%s", run->done,
                      run->plan->count, failures, run->counts[IC_OUTCOME_UNSUPPORTED],
                      run->counts[IC_OUTCOME_ERROR], ic_wall_s() - run->started, current);
}

/* -v: "outcome id", and for a failure its rule, severity and culprit, a line on stdout. */
static void ic_print_case(struct ic_run *run, const struct ic_case *c, const struct ic_result *res)
{
    char id[IC_CASE_ID_MAX];
    if (ic_case_format_id(c, id, sizeof(id)) < 0)
        return;
    ic_session_status_clear(run->session); /* a progress line on the same terminal */
    printf("%-11s %s", ic_outcome_name(res->outcome), id);
    char both[2 * IC_NAME_MAX + 2];
    if (res->rule != IC_RULE_NONE)
        printf("  [%s, %s, %s]", ic_rule_id(res->rule), ic_severity_name(res->severity),
               ic_result_culprit(c, res, both, sizeof(both)));
    putchar('\n');
}

/* Records a finished case: counts it and writes it to the stream. Once the stream holds it,
 * the plan keeps only its outcome and attribution, and the report reads the rest back from
 * the stream (ic_plan_cases); when the stream cannot be written, the whole result stays
 * packed in the plan instead. `res` is the item's result, whole. */
static void ic_count_result(struct ic_run *run, struct ic_planned *item,
                            const struct ic_result *res)
{
    item->done = true;
    run->done++;
    run->counts[res->outcome]++;
    if (run->session->opts->verbose)
        ic_print_case(run, &item->c, res);
}

static void ic_record_result(struct ic_run *run, struct ic_planned *item,
                             const struct ic_result *res)
{
    ic_count_result(run, item, res);
    item->stream_offset = 0;
    if (run->stream_ok &&
        ic_stream_write_case(&run->stream, &item->c, res, &item->stream_offset) < 0) {
        fprintf(stderr, "\ninteropcheck: cannot write %s: %s; results stay in memory\n",
                run->stream.path, strerror(errno));
        run->stream_ok = false;
        item->stream_offset = 0;
    }
    /* A line written while the stream is held reaches the file only when the batch is
     * flushed: until then only a result the plan can make again (ic_plan_result) drops its
     * text. */
    bool in_stream = item->stream_offset > 0 && !run->stream.held;
    if (item->decided || in_stream) {
        ic_result_packed_release(&item->result);
        item->result =
            (struct ic_result_packed){res->outcome, res->rule, res->side, res->severity, NULL};
    } else if (ic_result_pack(res, &item->result) < 0) {
        /* Out of memory: the outcome is kept for the counts, the rest is lost. */
        ic_result_packed_release(&item->result);
        item->result =
            (struct ic_result_packed){res->outcome, res->rule, res->side, res->severity, NULL};
    }
}

static void ic_on_result(void *context, size_t index, const struct ic_result *res)
{
    struct ic_run *run = context;
    struct ic_planned *item = &run->plan->items[run->run_index[index]];
    ic_record_result(run, item, res);
    ic_print_progress(run, &item->c, false);
}

/* A case that ran while discovery imported, its line in the stream already (ic_early_take):
 * counted and kept as ic_record_result keeps a case written to the stream. */
static void ic_take_early(void *context, struct ic_planned *item,
                          const struct ic_result_packed *fields, int64_t stream_offset)
{
    struct ic_run *run = context;
    struct ic_result res;
    ic_result_unpack(fields, &res); /* the outcome and attribution, for the counts and -v */
    ic_count_result(run, item, &res);
    item->stream_offset = stream_offset;
    ic_result_packed_release(&item->result);
    item->result = *fields;
}

/* The stream failed while the early results were copied in: the cases taken (the only ones
 * of the plan to run that are done before the run) run again, their results kept in memory. */
static void ic_untake_early(struct ic_run *run)
{
    for (size_t i = 0; i < run->plan->count; i++) {
        struct ic_planned *item = &run->plan->items[i];
        if (!item->run || !item->done)
            continue;
        item->done = false;
        run->done--;
        run->counts[item->result.outcome]--;
        item->stream_offset = 0;
        item->result = (struct ic_result_packed){0};
    }
}

/* --- Output --------------------------------------------------------------------------------- */

static int ic_default_output(char *path, size_t size, char *err, size_t err_size)
{
    char stamp[64];
    if (mkdir("reports", 0777) < 0 && errno != EEXIST) {
        snprintf(err, err_size, "cannot create the reports directory: %s (use -o FILE)",
                 strerror(errno));
        return IC_EIO;
    }
    ic_utc_now(stamp, sizeof(stamp), "%Y%m%d-%H%M%S");
    snprintf(path, size, "reports/interopcheck-%s.json", stamp);
    return 0;
}

/* The closing lines name exactly the files written: the report, the stream when it was
 * kept whole (NULL otherwise), then the views (ic_views_write). */
static void ic_print_summary(const struct ic_run *run, double seconds, const char *path,
                             const char *stream, const cJSON *report)
{
    const struct ic_plan *plan = run->plan;
    if (run->done < plan->count)
        printf("interopcheck: %zu of %zu cases (interrupted) in %.1f s:", run->done, plan->count,
               seconds);
    else
        printf("interopcheck: %zu cases in %.1f s:", plan->count, seconds);
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        if (run->counts[o])
            printf(" %zu %s", run->counts[o], ic_outcome_name(o));
    }
    printf("\n");
    if (!run->session->opts->quiet) {
        /* Findings lead: one line per cause, the harmful ones (every crash) always. */
        ic_views_print_findings(stdout, report, path, 20);
        printf("\n%-16s %7s %6s %6s %7s %6s %7s %6s %6s %6s\n", "protocol", "cases", "pass", "fail",
               "unsupp", "crash", "timeout", "error", "xfail", "xpass");
        /* From the report's summary, which counts the outcomes after expectations. */
        const cJSON *protocols = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(report, "summary"), "protocols");
        const cJSON *protocol;
        cJSON_ArrayForEach(protocol, protocols)
        {
            size_t counts[IC_OUTCOME_COUNT] = {0}, total = 0;
            const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(protocol, "outcomes");
            for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
                counts[o] =
                    ic_json_count(cJSON_GetObjectItemCaseSensitive(outcomes, ic_outcome_name(o)));
                total += counts[o];
            }
            if (!total)
                continue;
            printf("%-16s %7zu %6zu %6zu %7zu %6zu %7zu %6zu %6zu %6zu\n", protocol->string, total,
                   counts[IC_OUTCOME_PASS], counts[IC_OUTCOME_FAIL], counts[IC_OUTCOME_UNSUPPORTED],
                   counts[IC_OUTCOME_CRASH], counts[IC_OUTCOME_TIMEOUT], counts[IC_OUTCOME_ERROR],
                   counts[IC_OUTCOME_XFAIL], counts[IC_OUTCOME_XPASS]);
        }
    }
    printf("\nreport: %s\n", path);
    if (stream)
        printf("stream: %s\n", stream);
}

/* --- Reproducers ---------------------------------------------------------------------------- */

/* The request for a finding's reproducer: its example case `c` and the failure to show. */
static cJSON *ic_repro_request(const cJSON *c, const cJSON *finding)
{
    const char *example = ic_json_string(finding, "example");
    const char *check = ic_json_string_or(finding, "check", "");
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(c, "checks");
    const cJSON *failed = cJSON_GetObjectItemCaseSensitive(checks, check);
    cJSON *request = cJSON_CreateObject();
    cJSON *failure = request ? cJSON_AddObjectToObject(request, "failure") : NULL;
    enum ic_rule rule = IC_RULE_NONE;
    ic_rule_from_id(ic_json_string(finding, "rule"), &rule);
    const struct ic_rule_info *info = ic_rule_info(rule);
    const cJSON *expectation = cJSON_GetObjectItemCaseSensitive(c, "expectation");
    const char *outcome =
        ic_json_string_or(expectation, "observed", ic_json_string_or(c, "outcome", "fail"));
    const char *fields[][2] = {
        {"case", example ? example : ""},
        {"finding", ic_json_string_or(finding, "id", "")},
        {"severity", ic_json_string_or(finding, "severity", "")},
        {"culprit", ic_json_string_or(finding, "culprit", "")},
        {"side", ic_json_string_or(finding, "side", "")},
        {"rule", ic_json_string_or(finding, "rule", "")},
        {"rule_text", info ? info->text : ""},
        {"check", check},
        {"outcome", outcome},
        {"note", ic_json_string_or(failed, "note", ic_json_string_or(c, "diagnostic", ""))},
        {"request", ic_json_string_or(c, "request", "")},
        {"exported", ic_json_string_or(c, "exported", "")},
        {"tool", IC_VERSION},
    };
    for (size_t i = 0; failure && i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (!cJSON_AddStringToObject(failure, fields[i][0], fields[i][1]))
            failure = NULL;
    }
    if (!c || !failure || !cJSON_AddStringToObject(request, "case", example)) {
        cJSON_Delete(request);
        return NULL;
    }
    return request;
}

struct ic_repro_context {
    cJSON **findings; /* the finding of each request */
    size_t written, failed;
};

static void ic_on_script(void *context, size_t index, const char *script, const char *error)
{
    struct ic_repro_context *ctx = context;
    cJSON *finding = ctx->findings[index];
    cJSON_DeleteItemFromObjectCaseSensitive(finding, "reproducer");
    cJSON_DeleteItemFromObjectCaseSensitive(finding, "reproducer_error");
    if (script && cJSON_AddStringToObject(finding, "reproducer", script)) {
        ctx->written++;
    } else {
        cJSON_AddStringToObject(finding, "reproducer_error", error ? error : "no script");
        ctx->failed++;
    }
}

/* Gives every finding of the report its reproducer, written by a worker from the finding's
 * example case (`examples`, in the findings' order: ic_findings_attach). A finding whose
 * script could not be written says why instead. */
static int ic_run_reproducers(struct ic_session *session, cJSON *report, const cJSON *examples)
{
    cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    size_t count = (size_t)cJSON_GetArraySize(findings);
    struct ic_repro_context ctx = {0};
    cJSON **requests = calloc(count ? count : 1, sizeof(*requests));
    ctx.findings = calloc(count ? count : 1, sizeof(*ctx.findings));
    int rc = requests && ctx.findings ? 0 : IC_ENOMEM;
    size_t n = 0;
    cJSON *finding;
    const cJSON *example = cJSON_IsArray(examples) ? examples->child : NULL;
    cJSON_ArrayForEach(finding, findings)
    {
        if (rc < 0 || !example)
            break;
        requests[n] = ic_repro_request(example, finding);
        if (!requests[n]) {
            rc = IC_ENOMEM;
            break;
        }
        ctx.findings[n++] = finding;
        example = example->next;
    }
    if (rc == 0 && n > 0) {
        ic_session_status(session, true, "writing %zu reproducers", n);
        rc = ic_pool_reproduce(session->pool, requests, n, ic_on_script, &ctx);
        ic_session_status_clear(session);
    }
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(requests[i]);
    free(requests);
    free(ctx.findings);
    if (ctx.failed)
        fprintf(stderr,
                "interopcheck: %zu of %zu reproducers could not be written (see "
                "reproducer_error in the report)\n",
                ctx.failed, n);
    return rc;
}

/* --- Libraries that could not be tested ---------------------------------------------------- */

static bool ic_named(const struct ic_options *opts, const char *name)
{
    for (int i = 0; i < opts->producers.count; i++) {
        if (strcmp(opts->producers.items[i], name) == 0)
            return true;
    }
    for (int i = 0; i < opts->consumers.count; i++) {
        if (strcmp(opts->consumers.items[i], name) == 0)
            return true;
    }
    return false;
}

/* Says which selected libraries cannot be tested and why; returns how many of them make the
 * exit status 3: any whose import raised or crashed, and any named on the command line that is
 * not installed. A library merely not installed, under --all, is a note. */
static int ic_report_untested(const struct ic_catalog *catalog, const struct ic_libset *wanted,
                              const struct ic_options *opts)
{
    int count = 0;
    char error[512]; /* the library's text, escaped for the terminal and cut */
    for (int i = 0; i < catalog->count; i++) {
        const struct ic_library *lib = &catalog->libs[i];
        if (!ic_libset_has(wanted, i) || lib->state == IC_LIBRARY_LOADED)
            continue;
        bool named = ic_named(opts, lib->name);
        ic_text_for_terminal(error, sizeof(error), lib->error);
        if (lib->state == IC_LIBRARY_NOT_INSTALLED && !named) {
            if (!opts->quiet)
                fprintf(stderr, "interopcheck: %s is not installed, so it is not tested (%s)\n",
                        lib->name, error);
            continue;
        }
        if (lib->state == IC_LIBRARY_INVALID && !named) {
            if (!opts->quiet)
                fprintf(stderr, "interopcheck: the probe file of %s is unusable: %s\n", lib->name,
                        error);
            continue;
        }
        const char *why = lib->state == IC_LIBRARY_NOT_INSTALLED  ? "it is not installed"
                          : lib->state == IC_LIBRARY_IMPORT_CRASH ? "its import crashed"
                          : lib->state == IC_LIBRARY_INVALID      ? "its probe file is unusable"
                                                                  : "its import raised";
        fprintf(stderr, "interopcheck: %s could not be tested: %s: %s\n", lib->name, why, error);
        count++;
    }
    return count;
}

/* --- Expectations and the exit status ------------------------------------------------------ */

/* What turns a report into an exit status: the expectations files and the outcomes that fail
 * the run. Prepared before anything runs, so that a typo in an expectations file or in
 * --fail-on costs nothing; applied once the report is built. */
struct ic_run_policy {
    struct ic_expectations *expectations; /* NULL without --expect */
    bool fails[IC_OUTCOME_COUNT];         /* outcomes that make the exit status 1 */
};

static int ic_run_policy_open(const struct ic_options *opts, struct ic_run_policy *policy,
                              char *err, size_t err_size)
{
    memset(policy, 0, sizeof(*policy));
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        policy->fails[o] = opts->fail_on.count == 0 && ic_outcome_is_failure(o);
    for (int i = 0; i < opts->fail_on.count; i++) {
        enum ic_outcome outcome;
        if (ic_outcome_from_name(opts->fail_on.items[i], &outcome) < 0) {
            size_t used = (size_t)snprintf(
                err, err_size, "--fail-on: unknown outcome '%s'; valid:", opts->fail_on.items[i]);
            for (int o = 0; o < IC_OUTCOME_COUNT && used < err_size; o++)
                used += (size_t)snprintf(err + used, err_size - used, " %s", ic_outcome_name(o));
            return IC_EUSAGE;
        }
        policy->fails[outcome] = true;
    }
    if (opts->strict)
        policy->fails[IC_OUTCOME_XPASS] = true;
    if (opts->nexpect > 0)
        return ic_expect_load(opts->expect, opts->nexpect, &policy->expectations, err, err_size);
    return 0;
}

static void ic_run_policy_close(struct ic_run_policy *policy)
{
    ic_expect_free(policy->expectations);
    policy->expectations = NULL;
}

/* With expectations, which the run's case source applies to each case it makes: recounts
 * the report's summary from those cases, warns about entries that matched none, and gives the
 * terminal's counts the outcomes after expectations, so that every writer agrees with the
 * report. The plan keeps the outcomes observed (the crash ledger reads those). */
static int ic_run_policy_apply(const struct ic_run_policy *policy, cJSON *report,
                               struct ic_plan_cases *cases, size_t counts[IC_OUTCOME_COUNT])
{
    if (!policy->expectations)
        return 0;
    char err[1024];
    int rc = ic_views_expect_cases(policy->expectations, report, &cases->base, cases->matched, err,
                                   sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        return rc;
    }
    const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(report, "summary"), "outcomes");
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        counts[o] = ic_json_count(cJSON_GetObjectItemCaseSensitive(outcomes, ic_outcome_name(o)));
    return 0;
}

/* 1 when an outcome of the --fail-on set (with --strict, xpass too) occurred, from the
 * report's summary, which has the outcomes after expectations. */
static int ic_run_exit_status(const struct ic_run_policy *policy, const cJSON *report)
{
    const cJSON *summary = cJSON_GetObjectItemCaseSensitive(report, "summary");
    const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(summary, "outcomes");
    int status = IC_EXIT_OK;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        const cJSON *count = cJSON_GetObjectItemCaseSensitive(outcomes, ic_outcome_name(o));
        if (policy->fails[o] && cJSON_GetNumberValue(count) > 0)
            status = IC_EXIT_FAILURES;
    }
    const cJSON *xpass = cJSON_GetObjectItemCaseSensitive(outcomes, "xpass");
    if (cJSON_GetNumberValue(xpass) > 0)
        fprintf(stderr,
                "interopcheck: %.0f cases passed that an expectation says fail (xpass)%s: "
                "remove or narrow their entries\n",
                cJSON_GetNumberValue(xpass),
                policy->fails[IC_OUTCOME_XPASS] ? ", which fails this run" : "");
    return status;
}

/* The statuses that say the run tested less than was asked: 3 when a selected library could
 * not be tested, 4 when no case reached a verdict. They take precedence over 1 and 0, so that
 * CI never reads a run that tested nothing as green, nor as an ordinary failure. */
static int ic_run_tested_status(const struct ic_plan *plan, int untested, int status)
{
    size_t verdicts = 0;
    for (size_t i = 0; i < plan->count; i++) {
        enum ic_outcome o = plan->items[i].result.outcome;
        if (plan->items[i].done && o != IC_OUTCOME_UNSUPPORTED && o != IC_OUTCOME_ERROR)
            verdicts++;
    }
    if (untested > 0) {
        fprintf(stderr,
                "interopcheck: exit status %d: %d selected librar%s could not be tested "
                "(see above)\n",
                IC_EXIT_UNTESTED_LIB, untested, untested == 1 ? "y" : "ies");
        return IC_EXIT_UNTESTED_LIB;
    }
    if (verdicts == 0) {
        if (plan->count == 0)
            fprintf(stderr,
                    "interopcheck: exit status %d: nothing was tested: the selection "
                    "has no case (interopcheck list shows what each library offers)\n",
                    IC_EXIT_NOTHING_TESTED);
        else
            fprintf(stderr,
                    "interopcheck: exit status %d: nothing was tested: none of the %zu "
                    "cases reached a verdict (each was unsupported or an error)\n",
                    IC_EXIT_NOTHING_TESTED, plan->count);
        return IC_EXIT_NOTHING_TESTED;
    }
    return status;
}

static cJSON *ic_run_json(const struct ic_session *session, const struct ic_options *opts,
                          const char *started)
{
    char seed[32];
    cJSON *run = cJSON_CreateObject();
    if (!run)
        return NULL;
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)opts->seed);
    cJSON_AddStringToObject(run, "started", started);
    cJSON_AddStringToObject(run, "seed", seed);
    cJSON_AddNumberToObject(run, "jobs", session->jobs);
    cJSON_AddNumberToObject(run, "timeout_s", opts->timeout_s);
    if (opts->size)
        cJSON_AddNumberToObject(run, "size", (double)opts->size);
    if (opts->last_failed)
        cJSON_AddStringToObject(run, "last_failed", opts->last_failed);
    cJSON *dirs = cJSON_AddArrayToObject(run, "probe_dirs");
    for (int i = 0; dirs && i < session->ndirs; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(session->dirs[i]));
    cJSON *filters = cJSON_AddObjectToObject(run, "filters");
    const struct {
        const char *key;
        const struct ic_name_list *list;
    } lists[] = {{"producer", &opts->producers}, {"consumer", &opts->consumers},
                 {"protocol", &opts->protocols}, {"dtype", &opts->dtypes},
                 {"layout", &opts->layouts},     {"device", &opts->devices}};
    for (size_t i = 0; filters && i < sizeof(lists) / sizeof(lists[0]); i++) {
        cJSON *values = cJSON_AddArrayToObject(filters, lists[i].key);
        for (int j = 0; values && j < lists[i].list->count; j++)
            cJSON_AddItemToArray(values, cJSON_CreateString(lists[i].list->items[j]));
    }
    return run;
}

/* --- Interruption -------------------------------------------------------------------------- */

/* The signal that asked the run to stop (SIGINT or SIGTERM), 0 while none did. */
static volatile sig_atomic_t ic_stop_signal;

static void ic_on_stop(int sig)
{
    /* A second Ctrl-C leaves at once; the workers die with us (PR_SET_PDEATHSIG). */
    if (ic_stop_signal && sig == SIGINT)
        _exit(130);
    ic_stop_signal = sig;
}

static void ic_catch_stops(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = ic_on_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
}

/* --- The run -------------------------------------------------------------------------------- */

/* Every file the run writes, named and checked before anything runs. */
static int ic_run_outputs(const struct ic_options *opts, char *output, size_t output_size,
                          char *stream_path, size_t stream_size, char *err, size_t err_size)
{
    struct ic_output_list outputs = {0};
    char html[PATH_MAX];
    int rc = 0;
    if (opts->output)
        snprintf(output, output_size, "%s", opts->output);
    else
        rc = ic_default_output(output, output_size, err, err_size);
    if (rc < 0)
        return rc;
    ic_output_sibling(output, ".jsonl", stream_path, stream_size);
    ic_output_sibling(output, ".html", html, sizeof(html));
    if (ic_output_list_add(&outputs, output) < 0 || ic_output_list_add(&outputs, stream_path) < 0 ||
        ic_output_list_add(&outputs, opts->html ? opts->html : html) < 0 ||
        ic_output_list_add(&outputs, opts->junit) < 0 ||
        ic_output_list_add(&outputs, opts->markdown) < 0) {
        snprintf(err, err_size, "out of memory");
        rc = IC_ENOMEM;
    }
    if (rc == 0)
        rc = ic_output_list_check(&outputs, err, err_size);
    ic_output_list_release(&outputs);
    return rc;
}

/* Opens the result stream with the report's skeleton, and records the cases that need no run
 * (decided by the plan, or restored by --resume). Returns how many cases are left to run. */
static size_t ic_run_start_stream(struct ic_run *run, struct ic_session *session,
                                  const char *stream_path, const cJSON *tool, const cJSON *run_json,
                                  const cJSON *python)
{
    struct ic_plan *plan = run->plan;
    cJSON *skeleton =
        ic_report_skeleton(tool, run_json, python, &session->catalog, plan, &session->devices);
    run->stream_ok = skeleton && ic_stream_open(&run->stream, stream_path, run_json, skeleton) == 0;
    cJSON_Delete(skeleton);
    if (!run->stream_ok)
        fprintf(stderr, "interopcheck: cannot write %s: %s; results stay in memory\n", stream_path,
                strerror(errno));
    size_t to_run = 0;
    struct ic_result res;
    struct ic_plan_made made = IC_PLAN_MADE_NONE;
    /* One flush for the batch, not one a line: --all decides 128 000 cases here, and a run
     * killed before the batch is out decides them again when it is resumed. */
    bool held = run->stream_ok && ic_stream_hold(&run->stream, true) == 0;
    for (size_t i = 0; i < plan->count; i++) {
        if (plan->items[i].run) {
            to_run++;
            continue;
        }
        ic_json_arena_begin(); /* the line printed of it is all that stays (ic_json.h) */
        if (ic_plan_result_again(&session->catalog, &plan->items[i], &res, &made) == 0)
            ic_record_result(run, &plan->items[i], &res);
        ic_json_arena_end();
    }
    if (held && run->stream_ok && ic_stream_hold(&run->stream, false) < 0) {
        fprintf(stderr, "interopcheck: cannot write %s: %s; results stay in memory\n",
                run->stream.path, strerror(errno));
        run->stream_ok = false;
    }
    /* A batch that did not reach the file is not read back: its cases are made again from
     * the plan, or from what a resumed case kept packed while the stream was held. */
    for (size_t i = 0; held && !run->stream_ok && i < plan->count; i++) {
        if (!plan->items[i].run)
            plan->items[i].stream_offset = 0;
    }
    return to_run;
}

/* Runs the cases the plan left to run. IC_EINTR when a signal stopped the run. */
static int ic_run_pool(struct ic_run *run, struct ic_session *session,
                       const struct ic_ledger *ledger, size_t to_run)
{
    struct ic_plan *plan = run->plan;
    struct ic_case *cases = calloc(to_run ? to_run : 1, sizeof(*cases));
    run->run_index = calloc(to_run ? to_run : 1, sizeof(*run->run_index));
    if (!cases || !run->run_index) {
        free(cases);
        return IC_ENOMEM;
    }
    /* A case that ran while discovery imported (ic_early.h) is done already. */
    for (size_t i = 0, k = 0; i < plan->count; i++) {
        if (plan->items[i].run && !plan->items[i].done) {
            cases[k] = plan->items[i].c;
            run->run_index[k++] = i;
        }
    }
    int rc = ic_run_ledger_apply(ledger, session);
    if (rc == 0)
        rc = ic_stop_signal ? IC_EINTR
                            : ic_pool_run(session->pool, cases, to_run, ic_on_result, run);
    if (rc == 0 || rc == IC_EINTR)
        ic_run_ledger_update(ledger, plan, &session->catalog);
    free(cases);
    return rc;
}

/* The exit status of an interrupted run: 128 + the signal, as a shell reports it. */
static int ic_run_interrupted_status(void)
{
    return 128 + (ic_stop_signal ? ic_stop_signal : SIGINT);
}

/* Everything one `interopcheck` run holds, from the options to the exit status: the steps
 * below fill it in order, and ic_run_command_close releases whatever was made. */
struct ic_run_command {
    struct ic_options opts; /* a copy: --resume fills its selection from the report */
    struct ic_session session;
    bool session_open;
    struct ic_resume resume;
    struct ic_plan plan;
    struct ic_filter filter;
    struct ic_libset wanted;
    struct ic_ledger ledger; /* the crash ledger (ic_run_ledger.h), open once discovery starts */
    bool ledger_open;
    struct ic_early *early; /* cases run while discovery imports; NULL: none */
    int untested;
    struct ic_run run;
    struct ic_run_policy policy;
    cJSON *tool, *run_json, *python;
    cJSON *report; /* without its cases, which `cases` makes when read */
    struct ic_plan_cases cases;
    bool cases_open;
    /* The dashboard's cases, collected while the JSON report is written (NULL: not, or the
     * write failed; the dashboard then reads the cases itself). */
    struct ic_html_collector *html_cases;
    char err[4096], output[PATH_MAX], stream_path[PATH_MAX + 8], started[64];
    double start, discovery_s, cases_wall_s;
    bool interrupted, stream_kept;
};

/* The outputs, the policy and a report to resume are checked before anything runs. */
static int ic_run_command_open(struct ic_run_command *cmd)
{
    struct ic_options *opts = &cmd->opts;
    if (opts->last_failed) {
        int rc =
            ic_last_failed_open(opts->last_failed, opts, &cmd->resume, cmd->err, sizeof(cmd->err));
        if (rc < 0)
            return rc == IC_ENOTFOUND ? rc : IC_EUSAGE; /* none failed: nothing to test */
    }
    if (ic_run_policy_open(opts, &cmd->policy, cmd->err, sizeof(cmd->err)) < 0 ||
        (opts->resume &&
         ic_resume_open(opts->resume, opts, &cmd->resume, cmd->err, sizeof(cmd->err)) < 0) ||
        (!opts->collect_only &&
         ic_run_outputs(opts, cmd->output, sizeof(cmd->output), cmd->stream_path,
                        sizeof(cmd->stream_path), cmd->err, sizeof(cmd->err)) < 0) ||
        ic_session_open(&cmd->session, opts, cmd->err, sizeof(cmd->err)) < 0)
        return IC_EUSAGE;
    cmd->session_open = true;
    if (ic_build_filter(opts, &cmd->session.catalog, &cmd->filter, cmd->err, sizeof(cmd->err)) < 0)
        return IC_EUSAGE;
    ic_catch_stops();
    ic_pool_set_stop(cmd->session.pool, &ic_stop_signal);
    cmd->start = ic_wall_s();
    ic_utc_now(cmd->started, sizeof(cmd->started), "%Y-%m-%dT%H:%M:%SZ");
    return 0;
}

/* --case ID: the selection is the case's own producer, consumer, protocol, dtype, layout and
 * device (its variant is picked from the plan by id). IC_ENOMEM. */
static int ic_case_selection(const struct ic_case *c, struct ic_options *opts)
{
    struct ic_name_list *lists[] = {&opts->producers, &opts->consumers, &opts->protocols,
                                    &opts->dtypes,    &opts->layouts,   &opts->devices};
    const char *names[] = {c->producer,
                           c->consumer,
                           ic_protocol_id(c->protocol),
                           ic_dtype_name(c->dtype),
                           ic_layout_name(c->layout),
                           ic_device_kind_name(c->device.kind)};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        if (ic_name_list_add(lists[i], names[i]) < 0)
            return IC_ENOMEM;
    }
    return 0;
}

/* --case ID: the planned case of that id. */
static bool ic_is_the_case(const char *id, const void *wanted)
{
    return strcmp(id, wanted) == 0;
}

/* Imports the libraries the selection needs (those named, or all: every consumer of the
 * chosen producers is a candidate when no consumer is named) and plans the cases. */
static int ic_run_command_plan(struct ic_run_command *cmd)
{
    const struct ic_options *opts = &cmd->opts;
    struct ic_session *session = &cmd->session;
    if (opts->consumers.count && (ic_libset_merge(&cmd->wanted, &cmd->filter.consumers) < 0 ||
                                  ic_libset_merge(&cmd->wanted, &cmd->filter.producers) < 0))
        return snprintf(cmd->err, sizeof(cmd->err), "out of memory"), IC_ENOMEM;
    if (!opts->consumers.count)
        ic_libset_fill(&cmd->wanted);
    if (!opts->collect_only) {
        if (ic_ledger_open(&cmd->ledger, session->python) < 0)
            return snprintf(cmd->err, sizeof(cmd->err), "out of memory"), IC_ENOMEM;
        cmd->ledger_open = true;
    }
    /* Cases start while discovery imports (ic_early.h), for a plain run: the others pick
     * their cases from a report once the plan is made. Out of memory: they wait for it. */
    if (!opts->collect_only && !opts->resume && !opts->last_failed && !opts->case_id) {
        cmd->early = ic_early_open(session, &cmd->filter, &cmd->ledger);
        session->between = cmd->early ? ic_early_between : NULL;
        session->between_context = cmd->early;
    }
    double discovery_start = ic_wall_s();
    int discovered = ic_session_discover(session, &cmd->wanted, true);
    session->between = NULL;
    if (discovered < 0)
        return snprintf(cmd->err, sizeof(cmd->err), "discovery failed"), IC_EENV;
    cmd->discovery_s = ic_wall_s() - discovery_start;
    cmd->untested = ic_report_untested(&session->catalog, &cmd->wanted, opts);
    for (int k = 0; k < IC_KIND_COUNT; k++) {
        if ((cmd->filter.devices & (1u << k)) && !(session->devices.available & (1u << k)) &&
            (opts->devices.count || !opts->quiet))
            fprintf(stderr, "interopcheck: no %s cases: %s\n", ic_device_kind_name(k),
                    session->devices.detail[k]);
    }
    if (ic_plan_build(&session->catalog, &cmd->filter, session->devices.available, &cmd->plan) < 0)
        return snprintf(cmd->err, sizeof(cmd->err), "out of memory while planning"), IC_ENOMEM;
    if (opts->case_id && ic_plan_retain(&cmd->plan, ic_is_the_case, opts->case_id) == 0) {
        snprintf(cmd->err, sizeof(cmd->err),
                 "%s is not a case of this environment: its producer cannot build it or its "
                 "consumer does not take the protocol (see 'interopcheck --collect-only')",
                 opts->case_id);
        return IC_ENOTFOUND;
    }
    if (opts->last_failed) {
        int kept = ic_last_failed_narrow(&cmd->resume, &cmd->plan);
        if (!opts->quiet)
            fprintf(stderr, "interopcheck: running again %d of the %zu cases that failed in %s\n",
                    kept, cmd->resume.ncases, opts->last_failed);
        return 0;
    }
    if (!opts->resume)
        return 0;
    int restored = ic_resume_restore(&cmd->resume, &cmd->plan, cmd->err, sizeof(cmd->err));
    if (restored < 0)
        return restored;
    if (!opts->quiet)
        printf("interopcheck: resuming %s: %d cases finished, the rest runs now\n", opts->resume,
               restored);
    return 0;
}

/* Runs the cases on the workers, streaming each result as it finishes. */
static int ic_run_command_execute(struct ic_run_command *cmd)
{
    struct ic_run *run = &cmd->run;
    cmd->tool = ic_session_tool_json();
    cmd->run_json = ic_run_json(&cmd->session, &cmd->opts, cmd->started);
    cmd->python = ic_session_python_json(&cmd->session);
    if (!cmd->tool || !cmd->run_json || !cmd->python)
        return snprintf(cmd->err, sizeof(cmd->err), "out of memory"), IC_ENOMEM;
    run->session = &cmd->session;
    run->started = ic_wall_s();
    run->plan = &cmd->plan;
    size_t to_run = ic_run_start_stream(run, &cmd->session, cmd->stream_path, cmd->tool,
                                        cmd->run_json, cmd->python);
    /* The cases run while discovery imported went on until now; what they finished is the
     * run's, the rest runs with the others. */
    ic_early_stop(cmd->early);
    if (run->stream_ok) { /* otherwise those cases run again, their results kept in memory */
        int taken = ic_early_take(cmd->early, &cmd->plan, &run->stream, ic_take_early, run);
        if (taken == IC_ENOMEM)
            return snprintf(cmd->err, sizeof(cmd->err), "out of memory"), taken;
        if (taken < 0) {
            fprintf(stderr, "interopcheck: cannot write %s: %s; results stay in memory\n",
                    run->stream.path, strerror(errno));
            run->stream_ok = false;
            ic_untake_early(run);
        }
        to_run -= taken > 0 ? (size_t)taken : 0;
    }
    ic_early_close(cmd->early);
    cmd->early = NULL;
    double cases_start = ic_wall_s();
    int ran = ic_run_pool(run, &cmd->session, &cmd->ledger, to_run);
    cmd->cases_wall_s = ic_wall_s() - cases_start;
    cmd->interrupted = ran == IC_EINTR;
    if (ran < 0 && !cmd->interrupted) {
        snprintf(cmd->err, sizeof(cmd->err), "the worker processes could not be run");
        return ran;
    }
    ic_print_progress(run, NULL, true);
    ic_session_status_clear(&cmd->session);
    if (cmd->interrupted)
        fprintf(stderr,
                "interopcheck: interrupted: %zu of %zu cases finished; the reports hold them, "
                "marked interrupted (finish with: interopcheck --resume %s)\n",
                run->done, cmd->plan.count, cmd->output);
    cmd->stream_kept = run->stream_ok;
    ic_stream_close(&run->stream, !cmd->interrupted);
    run->stream_ok = false;
    return 0;
}

/* run.timing: the phases of the run (struct ic_pool_stats), for bench/ and for anyone asking
 * where a run's time went. */
static int ic_run_timing_json(struct ic_run_command *cmd)
{
    struct ic_pool_stats stats;
    ic_pool_stats(cmd->session.pool, &stats);
    cJSON *timing = cJSON_AddObjectToObject(cmd->run_json, "timing");
    if (!timing || !cJSON_AddNumberToObject(timing, "discovery_s", cmd->discovery_s) ||
        !cJSON_AddNumberToObject(timing, "cases_wall_s", cmd->cases_wall_s) ||
        !cJSON_AddNumberToObject(timing, "import_s", stats.import_s) ||
        !cJSON_AddNumberToObject(timing, "reimport_s", stats.reimport_s) ||
        !cJSON_AddNumberToObject(timing, "prewarm_import_s", stats.prewarm_s) ||
        !cJSON_AddNumberToObject(timing, "case_s", stats.case_s) ||
        !cJSON_AddNumberToObject(timing, "wait_s", stats.wait_s) ||
        !cJSON_AddNumberToObject(timing, "workers_started", stats.workers_started) ||
        !cJSON_AddNumberToObject(timing, "workers_copied", stats.copies) ||
        !cJSON_AddNumberToObject(timing, "workers_lean", stats.lean_workers) ||
        !cJSON_AddNumberToObject(timing, "restarts", stats.restarts) ||
        !cJSON_AddNumberToObject(timing, "isolated_cases", stats.isolated_cases) ||
        !cJSON_AddNumberToObject(timing, "starts_declined", stats.starts_declined) ||
        !cJSON_AddNumberToObject(timing, "ledger_pairs", stats.ledger_pairs) ||
        !cJSON_AddNumberToObject(timing, "early_cases", stats.early_cases) ||
        !cJSON_AddNumberToObject(timing, "early_workers", stats.early_workers))
        return IC_ENOMEM;
    cJSON *stages = cJSON_AddObjectToObject(timing, "stages_s");
    cJSON *warm = stages ? cJSON_AddObjectToObject(timing, "stages_warm_s") : NULL;
    for (int i = 0; warm && i < IC_STAGE_COUNT; i++) {
        const char *name = ic_stage_name((enum ic_stage)i);
        if (!cJSON_AddNumberToObject(stages, name, stats.stage_s[i]) ||
            !cJSON_AddNumberToObject(warm, name, stats.stage_warm_s[i]))
            return IC_ENOMEM;
    }
    return warm && cJSON_AddNumberToObject(timing, "warm_cases", stats.warm_cases) ? 0
                                                                                  : IC_ENOMEM;
}

/* What the JSON report's pass over the cases also fills: the findings and the dashboard. On
 * two cores or more the cases are made by a thread of their own (ic_cases_relay.h), a few
 * hundred ahead of the pass: making them is a third of the pass, and the report stage is the
 * run's last seconds on one core otherwise (2.7 s of --all on 2 cores once, a fifth of a run
 * on many). */
struct ic_run_pass {
    struct ic_run_command *cmd;
    struct ic_findings_collector *findings;
    int findings_rc;              /* why the findings could not be attached (the write fails) */
    struct ic_cases_relay *relay; /* NULL: the pass makes its cases itself */
    int relay_rc;                 /* the relay's status, once finished */
};

static void ic_run_pass_case(void *context, const cJSON *c)
{
    struct ic_run_pass *pass = context;
    ic_findings_collector_add(pass->findings, c);
    if (pass->cmd->html_cases)
        ic_html_collector_add(pass->cmd->html_cases, c);
}

/* The cases the pass reads: made ahead by a relay where the process may use two cores or
 * more and a thread can start; else the run's own source, which the pass then makes itself. */
static struct ic_cases *ic_run_pass_source(struct ic_run_pass *pass)
{
    struct ic_run_command *cmd = pass->cmd;
    cpu_set_t usable;
    if (sched_getaffinity(0, sizeof(usable), &usable) == 0 && CPU_COUNT(&usable) >= 2 &&
        ic_cases_relay_start(&cmd->cases, &pass->relay) == 0)
        return ic_cases_relay_cases(pass->relay);
    pass->relay = NULL;
    return &cmd->cases.base;
}

/* Stops the relay (once): its status (0, or why the cases could not be made). */
static int ic_run_pass_relay_finish(struct ic_run_pass *pass)
{
    if (pass->relay) {
        pass->relay_rc = ic_cases_relay_finish(pass->relay);
        pass->relay = NULL;
    }
    return pass->relay_rc;
}

/* Once the cases are written: the findings, with their reproducers (which need workers, so an
 * interrupted run leaves them to its resumption), join the report after them. */
static int ic_run_pass_findings(void *context)
{
    struct ic_run_pass *pass = context;
    struct ic_run_command *cmd = pass->cmd;
    cJSON *examples = NULL;
    int rc = ic_run_pass_relay_finish(pass);
    if (rc == 0)
        rc = ic_findings_collector_attach(pass->findings, cmd->report, &examples);
    if (rc == 0 && !cmd->interrupted)
        ic_run_reproducers(&cmd->session, cmd->report, examples);
    cJSON_Delete(examples);
    pass->findings_rc = rc;
    return rc;
}

/* The JSON report, in one pass over the cases that also collects the findings (written after
 * the cases) and the dashboard's cases (written later, as a view). A dashboard that cannot
 * collect here (no temporary file) reads the cases itself later, where the error is said. */
static int ic_run_write_json(struct ic_run_command *cmd)
{
    struct ic_run_pass pass = {.cmd = cmd};
    int rc = ic_findings_collector_new(cmd->cases.base.count, true, &pass.findings);
    if (rc < 0) {
        snprintf(cmd->err, sizeof(cmd->err), "out of memory while building the report");
        return rc;
    }
    if (ic_html_collector_new(cmd->report, &cmd->html_cases) < 0)
        cmd->html_cases = NULL;
    struct ic_report_observer observer = {ic_run_pass_case, ic_run_pass_findings, &pass};
    rc = ic_report_write_atomic_observed(cmd->output, cmd->report, ic_run_pass_source(&pass),
                                         &observer, cmd->err, sizeof(cmd->err));
    int relay_rc = ic_run_pass_relay_finish(&pass); /* a write that failed before the findings */
    if (rc == 0 && relay_rc < 0)
        rc = relay_rc;
    ic_findings_collector_free(pass.findings);
    if (pass.findings_rc == IC_ENOMEM)
        snprintf(cmd->err, sizeof(cmd->err), "out of memory while building the report");
    else if (pass.findings_rc < 0) /* a case without a case id, or a pass of another length */
        snprintf(cmd->err, sizeof(cmd->err), "cannot group the cases read back from %s: %s",
                 cmd->stream_path, ic_strerror(pass.findings_rc));
    if (rc < 0) {
        ic_html_collector_free(cmd->html_cases);
        cmd->html_cases = NULL;
    }
    return rc;
}

/* The report: what ran, the expectations applied, findings with their reproducers, written
 * atomically. */
static int ic_run_command_report(struct ic_run_command *cmd)
{
    char finished[64];
    ic_utc_now(finished, sizeof(finished), "%Y-%m-%dT%H:%M:%SZ");
    if (!cJSON_AddStringToObject(cmd->run_json, "finished", finished) ||
        !cJSON_AddNumberToObject(cmd->run_json, "duration_s", ic_wall_s() - cmd->start) ||
        ic_run_timing_json(cmd) < 0)
        return snprintf(cmd->err, sizeof(cmd->err), "out of memory"), IC_ENOMEM;
    cmd->report = ic_report_skeleton(cmd->tool, cmd->run_json, cmd->python, &cmd->session.catalog,
                                     &cmd->plan, &cmd->session.devices);
    int rc = cmd->report && cJSON_AddBoolToObject(cmd->report, "interrupted", cmd->interrupted)
                 ? 0
                 : IC_ENOMEM;
    if (rc == 0) {
        rc = ic_plan_cases_open(&cmd->cases, &cmd->plan, &cmd->session.catalog,
                                cmd->policy.expectations, cmd->stream_path);
        cmd->cases_open = rc == 0;
    }
    if (rc == 0)
        rc = ic_run_policy_apply(&cmd->policy, cmd->report, &cmd->cases, cmd->run.counts);
    if (rc == IC_ENOMEM)
        snprintf(cmd->err, sizeof(cmd->err), "out of memory while building the report");
    else if (rc < 0) /* the case source could not read a result back (ic_plan_cases.h) */
        snprintf(cmd->err, sizeof(cmd->err), "cannot read the results back from %s: %s",
                 cmd->stream_path, ic_strerror(rc));
    else
        rc = ic_run_write_json(cmd);
    /* The reproducers were the workers' last requests: they end while the views are made. */
    ic_pool_dismiss(cmd->session.pool);
    if (rc < 0 && cmd->stream_kept) {
        size_t used = strlen(cmd->err);
        snprintf(cmd->err + used, sizeof(cmd->err) - used, " (the results are in %s)",
                 cmd->stream_path);
    }
    return rc;
}

/* The exit status, then the views, which come from the report just written, so they can
 * always be made again from it with `interopcheck report`; failing to write one is an
 * environment error. */
static int ic_run_command_finish(struct ic_run_command *cmd)
{
    double seconds = ic_wall_s() - cmd->start;
    ic_print_summary(&cmd->run, seconds, cmd->output, cmd->stream_kept ? cmd->stream_path : NULL,
                     cmd->report);
    int status = ic_run_exit_status(&cmd->policy, cmd->report);
    status = ic_run_tested_status(&cmd->plan, cmd->untested, status);
    if (cmd->interrupted)
        status = ic_run_interrupted_status();
    struct ic_views_request views = ic_views_asked(&cmd->opts);
    views.html_cases = cmd->html_cases;
    if (ic_views_write(cmd->report, &cmd->cases.base, cmd->output, &views, cmd->err,
                       sizeof(cmd->err)) < 0) {
        fprintf(stderr, "interopcheck: %s (make it again with: interopcheck report %s)\n", cmd->err,
                cmd->output);
        status = IC_EXIT_USAGE;
    }
    return status;
}

static void ic_run_command_close(struct ic_run_command *cmd)
{
    if (cmd->run.stream_ok)
        ic_stream_close(&cmd->run.stream, false);
    if (cmd->cases_open)
        ic_plan_cases_close(&cmd->cases);
    ic_html_collector_free(cmd->html_cases);
    cJSON_Delete(cmd->report);
    cJSON_Delete(cmd->tool);
    cJSON_Delete(cmd->run_json);
    cJSON_Delete(cmd->python);
    free(cmd->run.run_index);
    ic_early_close(cmd->early); /* before the pool goes, with the session */
    if (cmd->ledger_open)
        ic_ledger_release(&cmd->ledger);
    ic_plan_release(&cmd->plan);
    ic_filter_release(&cmd->filter);
    ic_libset_release(&cmd->wanted);
    if (cmd->session_open)
        ic_session_close(&cmd->session);
    ic_run_policy_close(&cmd->policy);
    if (cmd->opts.resume || cmd->opts.last_failed || cmd->opts.case_id) {
        /* The selection lists were filled from the report or the case id, into this copy
         * only. */
        struct ic_options *opts = &cmd->opts;
        struct ic_name_list *lists[] = {&opts->producers, &opts->consumers, &opts->protocols,
                                        &opts->dtypes,    &opts->layouts,   &opts->devices};
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
            ic_name_list_release(lists[i]);
    }
    ic_resume_close(&cmd->resume);
}

/* --case ID --no-fork: the case in this process (ic_worker_foreground), its result printed as
 * the report would hold it, and the exit status a run of it would have. */
static int ic_run_foreground(const struct ic_options *opts, const struct ic_case *c)
{
    struct ic_session session;
    char err[4096];
    if (ic_session_open(&session, opts, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        return IC_EXIT_USAGE;
    }
    bool reference = strcmp(c->consumer, IC_REFERENCE_CONSUMER) == 0;
    int p = ic_catalog_find(&session.catalog, c->producer);
    int q = reference ? -1 : ic_catalog_find(&session.catalog, c->consumer);
    int status = IC_EXIT_USAGE;
    struct ic_result *res = calloc(1, sizeof(*res));
    if (!res || p < 0 || (!reference && q < 0)) {
        fprintf(stderr, "interopcheck: %s\n",
                !res ? "out of memory" : "no probe of that name: see 'interopcheck list'");
        goto done;
    }
    struct ic_worker_config config = {
        .fd = -1, .events_fd = -1, .python = session.python, .kit_path = session.catalog.kit_path};
    struct ic_worker_probe producer = {c->producer, session.catalog.libs[p].path};
    struct ic_worker_probe consumer = {c->consumer, q >= 0 ? session.catalog.libs[q].path : ""};
    if (ic_worker_foreground(&config, &producer, reference ? NULL : &consumer, c, opts->seed, res,
                             err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        goto done;
    }
    cJSON *json = ic_case_to_json(c, res);
    char *text = json ? cJSON_Print(json) : NULL;
    if (text)
        printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(json);
    status = ic_outcome_is_failure(res->outcome) ? IC_EXIT_FAILURES
             : res->outcome == IC_OUTCOME_PASS || res->outcome == IC_OUTCOME_XPASS
                 ? IC_EXIT_OK
                 : IC_EXIT_NOTHING_TESTED;
done:
    free(res);
    ic_session_close(&session);
    return status;
}

/* --collect-only: the plan's case ids on stdout, one a line, in plan order, and the counts on
 * stderr. Exit status 0, or IC_EXIT_NOTHING_TESTED when no case would run. */
static int ic_run_command_collect(struct ic_run_command *cmd)
{
    size_t to_run = 0;
    char id[IC_CASE_ID_MAX];
    for (size_t i = 0; i < cmd->plan.count; i++) {
        const struct ic_planned *item = &cmd->plan.items[i];
        if (ic_case_format_id(&item->c, id, sizeof(id)) == 0)
            printf("%s\n", id);
        to_run += item->run;
    }
    if (!cmd->opts.quiet)
        fprintf(stderr,
                "interopcheck: %zu cases: %zu would run, %zu are decided without running "
                "(unsupported: the producer cannot make the array)\n",
                cmd->plan.count, to_run, cmd->plan.count - to_run);
    return to_run ? IC_EXIT_OK : IC_EXIT_NOTHING_TESTED;
}

int ic_cmd_run(const struct ic_options *given)
{
    struct ic_run_command *cmd = calloc(1, sizeof(*cmd));
    if (!cmd) {
        fprintf(stderr, "interopcheck: out of memory\n");
        return IC_EXIT_USAGE;
    }
    cmd->opts = *given;
    int status = IC_EXIT_USAGE;
    struct ic_case one;
    if (given->case_id && ic_case_parse_id(given->case_id, &one) < 0) {
        fprintf(stderr,
                "interopcheck: --case %s: not a case id "
                "(protocol.producer.consumer.device.dtype.layout[.variant])\n",
                given->case_id);
        free(cmd);
        return IC_EXIT_USAGE;
    }
    if (given->case_id && given->no_fork) {
        free(cmd);
        return ic_run_foreground(given, &one);
    }
    int rc = given->case_id ? ic_case_selection(&one, &cmd->opts) : 0;
    if (rc == 0)
        rc = ic_run_command_open(cmd);
    if (rc == 0)
        rc = ic_run_command_plan(cmd);
    if (rc == 0 && cmd->opts.collect_only) {
        status = ic_run_command_collect(cmd);
        ic_run_command_close(cmd);
        free(cmd);
        return status;
    }
    if (rc == 0)
        rc = ic_run_command_execute(cmd);
    if (rc == 0)
        rc = ic_run_command_report(cmd);
    if (rc == 0)
        status = ic_run_command_finish(cmd);
    else
        fprintf(stderr, "interopcheck: %s\n", cmd->err);
    if (rc == IC_ENOTFOUND && (cmd->opts.last_failed || cmd->opts.case_id))
        status = IC_EXIT_NOTHING_TESTED;
    ic_run_command_close(cmd);
    free(cmd);
    return status;
}
