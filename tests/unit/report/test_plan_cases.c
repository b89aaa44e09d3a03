/* Unit tests of a run's case source (ic_plan_cases), which the run's report and views read
 * instead of a report holding every case: a plan is built for a hand-made catalog, its cases
 * are "run" the way ic_cmd_run records them (written to a result stream, the plan keeping
 * only their outcome; one kept packed, as when the stream cannot be written; the plan's
 * refusals made again from the catalog), and the source must give back exactly the case
 * objects that were recorded, pass after pass, with expectations and findings applied; the
 * report and the findings written from it must be byte for byte those of a report that holds
 * the same cases; and a stream that was changed or removed must fail the pass, not give wrong
 * cases. The relay (ic_cases_relay), which makes the same cases in a thread of its own, must
 * give the same pass and the same report, across batches and past its arenas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_cases_relay.h"
#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_plan_cases.h"
#include "ic_report.h"
#include "ic_stream.h"
#include "tap.h"
#include "test_files.h"

static char tmpdir[] = "/tmp/ic_test_plan_cases.XXXXXX";

struct fixture {
    struct ic_library lib;
    struct ic_catalog catalog;
    struct ic_plan plan;
    char stream_path[600];
    cJSON *expected; /* the case objects recorded, in plan order */
    size_t fails;
    char first_fail[IC_CASE_ID_MAX];
};

/* One library, "numpy", that exports and imports the buffer protocol on the CPU and has every
 * dtype but bool and every layout but strided and reversed: its bool cases and its strided and
 * reversed ones are refusals the plan decides, for three reasons, each of the layouts' coming
 * back between cases that run (the source keeps a refusal's result for the next case refused
 * alike: ic_plan_result_again). */
static void fixture_catalog(struct fixture *f)
{
    memset(&f->lib, 0, sizeof(f->lib));
    snprintf(f->lib.name, sizeof(f->lib.name), "numpy");
    f->lib.state = IC_LIBRARY_LOADED;
    f->lib.dtypes = ~(uint32_t)0 & ~(1u << IC_DTYPE_BOOL);
    f->lib.layouts = ~(uint32_t)0 & ~(1u << IC_LAYOUT_STRIDED) & ~(1u << IC_LAYOUT_REVERSED);
    f->lib.exports = f->lib.imports = 1u << IC_PROTOCOL_BUFFER;
    f->lib.exports_on[IC_KIND_CPU] = f->lib.imports_on[IC_KIND_CPU] = 1u << IC_PROTOCOL_BUFFER;
    f->lib.devices = 1u << IC_KIND_CPU;
    memset(&f->catalog, 0, sizeof(f->catalog));
    f->catalog.libs = &f->lib;
    f->catalog.count = 1;
}

/* The object a case's reader must get: the case as recorded, with its finding. */
static void expect_case(struct fixture *f, const struct ic_case *c, const struct ic_result *res)
{
    cJSON *json = ic_case_to_json(c, res);
    char finding[IC_FINDING_ID_MAX];
    if (json && ic_findings_case_finding(json, finding, sizeof(finding)) > 0)
        cJSON_AddStringToObject(json, "finding", finding);
    cJSON_AddItemToArray(f->expected, json);
}

/* Runs the plan as ic_cmd_run records it: refusals and most cases into the stream, every third
 * run case a failure of one of two kinds, one case left unfinished (an interrupted run) and the
 * last one packed in the plan (a stream that could not be written). */
static int fixture_run(struct fixture *f)
{
    struct ic_filter filter;
    ic_filter_all(&filter);
    filter.protocols = 1u << IC_PROTOCOL_BUFFER;
    filter.reference_consumer = false;
    int rc = ic_plan_build(&f->catalog, &filter, 1u << IC_KIND_CPU, &f->plan);
    if (rc < 0 || f->plan.count < 10)
        return rc < 0 ? rc : IC_EINVAL;
    snprintf(f->stream_path, sizeof(f->stream_path), "%s/run.jsonl", tmpdir);
    struct ic_stream stream;
    cJSON *run_info = cJSON_CreateObject();
    rc = ic_stream_open(&stream, f->stream_path, run_info, NULL);
    cJSON_Delete(run_info);
    if (rc < 0)
        return rc;
    f->expected = cJSON_CreateArray();
    struct ic_result *res = malloc(sizeof(*res));
    size_t last_run = 0, unfinished = 0, ran = 0;
    for (size_t i = 0; i < f->plan.count; i++) {
        if (f->plan.items[i].run)
            last_run = i;
    }
    for (size_t i = 0; i < f->plan.count && rc == 0; i++) {
        struct ic_planned *item = &f->plan.items[i];
        if (item->run && ++ran == 2) {
            unfinished = i; /* stays not done */
            continue;
        }
        if (!item->run) {
            rc = ic_plan_result(&f->catalog, item, res);
        } else {
            memset(res, 0, sizeof(*res));
            ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, NULL);
            if (ran % 6 == 3) {
                ic_result_fail(res, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE, IC_SIDE_PRODUCER,
                               "the export says int%zu", 8 * (i % 4 + 1));
                if (!f->fails++)
                    ic_case_format_id(&item->c, f->first_fail, sizeof(f->first_fail));
            } else if (ran % 3 == 0) {
                ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_CONSUMER,
                               "element %zu reads 0x%zx, not the producer's value", i, i * 16);
                if (!f->fails++)
                    ic_case_format_id(&item->c, f->first_fail, sizeof(f->first_fail));
            }
            ic_result_conclude(res);
            res->duration_ms = 0.25 * (double)i;
        }
        if (rc < 0)
            break;
        item->done = true;
        expect_case(f, &item->c, res);
        if (i == last_run) {
            rc = ic_result_pack(res, &item->result);
            item->stream_offset = 0;
        } else {
            rc = ic_stream_write_case(&stream, &item->c, res, &item->stream_offset);
            item->result =
                (struct ic_result_packed){res->outcome, res->rule, res->side, res->severity, NULL};
        }
    }
    free(res);
    ic_stream_close(&stream, true);
    TAP_OK(rc == 0 && unfinished > 0 && f->fails > 1,
           "a plan of %zu cases ran: %zu failures, one unfinished", f->plan.count, f->fails);
    return rc;
}

static char *print(const cJSON *json)
{
    return json ? cJSON_PrintUnformatted(json) : NULL;
}

/* One pass of `cases` against the expected objects: returns how many matched in order. */
static size_t pass_matches(struct ic_cases *cases, const cJSON *expected, size_t *yielded)
{
    const cJSON *c, *want = expected->child;
    size_t same = 0;
    *yielded = 0;
    ic_cases_for_each(c, cases)
    {
        char *got = print(c), *wanted = print(want);
        if (got && wanted && strcmp(got, wanted) == 0)
            same++;
        else if (*yielded == same)
            TAP_DIAG("first difference at case %zu:\n# got  %s\n# want %s", *yielded, got, wanted);
        free(got);
        free(wanted);
        want = want ? want->next : NULL;
        (*yielded)++;
    }
    return same;
}

static void test_passes(struct fixture *f)
{
    struct ic_plan_cases source;
    size_t n = (size_t)cJSON_GetArraySize(f->expected), yielded;
    TAP_OK(ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, f->stream_path) == 0,
           "the source opens");
    TAP_OK(source.base.count == n, "it counts the finished cases (%zu of %zu)", source.base.count,
           n);
    for (int pass = 1; pass <= 2; pass++) {
        size_t same = pass_matches(&source.base, f->expected, &yielded);
        TAP_OK(same == n && yielded == n && ic_cases_status(&source.base) == 0,
               "pass %d gives every recorded case, as recorded, with its finding, in plan order "
               "(%zu of %zu the same, %zu given)",
               pass, same, n, yielded);
    }

    /* The report written from the source is the report that holds the cases. */
    cJSON *skeleton = cJSON_Parse("{\"schema\":\"interopcheck-report\",\"cases\":[],"
                                  "\"summary\":{\"total\":0}}");
    cJSON *whole = cJSON_Duplicate(skeleton, true);
    cJSON_ReplaceItemInObjectCaseSensitive(whole, "cases", cJSON_Duplicate(f->expected, true));
    char from_source[700], from_whole[700], err[1024];
    snprintf(from_source, sizeof(from_source), "%s/source.json", tmpdir);
    snprintf(from_whole, sizeof(from_whole), "%s/whole.json", tmpdir);
    int rc = ic_report_write_atomic(from_source, skeleton, &source.base, err, sizeof(err));
    int rc2 = ic_json_write_atomic(from_whole, whole, err, sizeof(err));
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    FILE *fa = fopen(from_source, "r"), *fb = fopen(from_whole, "r");
    if (fa && fb) {
        a = calloc(1, 1 << 22);
        b = calloc(1, 1 << 22);
        alen = fread(a, 1, (1 << 22) - 1, fa);
        blen = fread(b, 1, (1 << 22) - 1, fb);
    }
    TAP_OK(rc == 0 && rc2 == 0 && alen > 0 && alen == blen && memcmp(a, b, alen) == 0,
           "the report written from the source is byte for byte the one holding its cases "
           "(%zu and %zu bytes)",
           alen, blen);
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    free(a);
    free(b);

    /* Findings from the source are those of the report that holds the cases. */
    cJSON *examples = NULL;
    TAP_OK(ic_findings_attach(skeleton, &source.base, &examples) == 0 &&
               ic_findings_attach_report(whole) == 0,
           "findings are made from the source and from the whole report");
    char *fs = print(cJSON_GetObjectItemCaseSensitive(skeleton, "findings"));
    char *fw = print(cJSON_GetObjectItemCaseSensitive(whole, "findings"));
    TAP_OK(fs && fw && strcmp(fs, fw) == 0 &&
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(skeleton, "findings")) >= 1,
           "they are the same findings, cases and patterns included");
    free(fs);
    free(fw);
    /* Each finding's example case comes with it, whole, as the source gave it. */
    const cJSON *finding, *example = examples ? examples->child : NULL;
    size_t whole_examples = 0, nfindings = 0;
    cJSON_ArrayForEach(finding, cJSON_GetObjectItemCaseSensitive(skeleton, "findings"))
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(finding, "example"));
        const cJSON *c;
        nfindings++;
        cJSON_ArrayForEach(c, f->expected)
        {
            const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "id"));
            if (example && id && cid && strcmp(id, cid) == 0 && cJSON_Compare(c, example, true))
                whole_examples++;
        }
        example = example ? example->next : NULL;
    }
    TAP_OK(nfindings > 0 && whole_examples == nfindings && !example,
           "the examples are the findings' example cases, whole, in their order (%zu of %zu)",
           whole_examples, nfindings);
    cJSON_Delete(examples);
    cJSON_Delete(skeleton);
    cJSON_Delete(whole);
    ic_plan_cases_close(&source);
}

static void test_expectations(struct fixture *f)
{
    char text[IC_CASE_ID_MAX + 200];
    snprintf(text, sizeof(text), "%s a known bug\nbuffer.nobody.*.cpu.*.* stale\n", f->first_fail);
    const char *path = test_write_file(tmpdir, "expect.txt", text, strlen(text));
    struct ic_expectations *set = NULL;
    char err[1024] = "";
    TAP_OK(ic_expect_load(&path, 1, &set, err, sizeof(err)) == 0, "expectations load%s%s",
           err[0] ? ": " : "", err);
    struct ic_plan_cases source;
    if (!set || ic_plan_cases_open(&source, &f->plan, &f->catalog, set, f->stream_path) < 0) {
        ic_expect_free(set);
        return;
    }
    const cJSON *c;
    size_t xfail = 0, fail = 0;
    const cJSON *marked = NULL;
    ic_cases_for_each(c, &source.base)
    {
        const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "outcome"));
        xfail += outcome && strcmp(outcome, "xfail") == 0;
        fail += outcome && strcmp(outcome, "fail") == 0;
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "id"));
        if (id && strcmp(id, f->first_fail) == 0) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "expectation");
            const char *observed =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "observed"));
            const char *finding =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "finding"));
            if (observed && strcmp(observed, "fail") == 0 && finding && finding[0])
                marked = c;
        }
    }
    TAP_OK(xfail == 1 && fail == f->fails - 1,
           "the expected failure is xfail, the others fail (%zu xfail, %zu fail)", xfail, fail);
    TAP_OK(marked != NULL, "it says it was observed as fail, and keeps its finding");
    TAP_OK(source.matched[0] && !source.matched[1],
           "the source says which entries matched a case (the stale one did not)");
    ic_plan_cases_close(&source);
    ic_expect_free(set);
}

static void test_broken_stream(struct fixture *f)
{
    struct ic_plan_cases source;
    size_t first = SIZE_MAX, second = SIZE_MAX, yielded;
    for (size_t i = 0; i < f->plan.count; i++) { /* two cases read back from the stream */
        if (!f->plan.items[i].decided && f->plan.items[i].stream_offset > 0) {
            if (first == SIZE_MAX)
                first = i;
            else if (second == SIZE_MAX)
                second = i;
        }
    }
    if (second == SIZE_MAX) {
        TAP_OK(false, "the plan has two cases in the stream");
        return;
    }
    /* Another case's line where this case's should be: the pass stops, it does not lie. */
    int64_t saved = f->plan.items[first].stream_offset;
    f->plan.items[first].stream_offset = f->plan.items[second].stream_offset;
    if (ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, f->stream_path) == 0) {
        pass_matches(&source.base, f->expected, &yielded);
        TAP_OK(ic_cases_status(&source.base) == IC_EPROTO,
               "a line of another case at a case's offset fails the pass with IC_EPROTO (%d, "
               "after %zu cases)",
               ic_cases_status(&source.base), yielded);
        ic_plan_cases_close(&source);
    }
    f->plan.items[first].stream_offset = saved + 1; /* mid-line */
    if (ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, f->stream_path) == 0) {
        pass_matches(&source.base, f->expected, &yielded);
        TAP_OK(ic_cases_status(&source.base) == IC_EPROTO,
               "an offset inside a line fails the pass with IC_EPROTO (%d)",
               ic_cases_status(&source.base));
        ic_plan_cases_close(&source);
    }
    f->plan.items[first].stream_offset = saved;
    remove(f->stream_path);
    if (ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, f->stream_path) == 0) {
        pass_matches(&source.base, f->expected, &yielded);
        TAP_OK(ic_cases_status(&source.base) == IC_EIO,
               "a stream that is gone fails the pass with IC_EIO (%d)",
               ic_cases_status(&source.base));
        ic_plan_cases_close(&source);
    }
}

/* The text ic_case_json_text makes of `res` for `c` (the caller frees it), or NULL. */
static char *case_text(const struct ic_case *c, const struct ic_result *res)
{
    struct ic_text_buf text;
    ic_text_buf_init(&text);
    if (ic_case_json_text(c, res, &text) < 0) {
        ic_text_buf_release(&text);
        return NULL;
    }
    return text.data;
}

/* ic_plan_result_again into one result, case after case, as the source and the run's stream
 * use it: each result reads as ic_plan_result makes it afresh, also where a refusal comes back
 * after a result that was unpacked into the same memory. */
static void test_result_again(struct fixture *f)
{
    struct ic_result *again = malloc(sizeof(*again)), *fresh = malloc(sizeof(*fresh));
    struct ic_plan_made made = IC_PLAN_MADE_NONE;
    size_t decided = SIZE_MAX, differ = 0, made_n = 0;
    for (size_t i = 0; i < f->plan.count && decided == SIZE_MAX; i++)
        decided = f->plan.items[i].decided ? i : SIZE_MAX;
    if (decided == SIZE_MAX || !again || !fresh) {
        TAP_OK(false, "the plan has a decided case to make again");
        free(again);
        free(fresh);
        return;
    }
    struct ic_planned packed = f->plan.items[decided]; /* the same case, kept packed */
    packed.decided = false;
    packed.result = (struct ic_result_packed){0};
    memset(fresh, 0, sizeof(*fresh));
    ic_result_fail(fresh, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE, IC_SIDE_PRODUCER, "packed");
    ic_result_conclude(fresh);
    bool setup = ic_result_pack(fresh, &packed.result) == 0;
    /* Every case of the plan in turn, with the packed one between the first refusal and the
     * same refusal again. */
    for (size_t i = 0; setup && i <= f->plan.count; i++) {
        const struct ic_planned *item =
            i == decided + 1 ? &packed : &f->plan.items[i - (i > decided + 1)];
        int rc = ic_plan_result_again(&f->catalog, item, again, &made);
        int rc2 = ic_plan_result(&f->catalog, item, fresh);
        char *a = rc == 0 ? case_text(&item->c, again) : NULL;
        char *b = rc2 == 0 ? case_text(&item->c, fresh) : NULL;
        differ += rc != rc2 || (a && b && strcmp(a, b) != 0) || !a != !b;
        made_n += a != NULL;
        free(a);
        free(b);
    }
    TAP_OK(setup && made_n > 0 && differ == 0,
           "a result made again in reused memory reads as one made afresh (%zu of %zu differ)",
           differ, made_n);
    ic_result_packed_release(&packed.result);
    free(again);
    free(fresh);
}

/* The file the report written from `cases` makes (`name` in tmpdir), read whole into *ret
 * (the caller frees it): its length, or 0 when it could not be written or read. */
static size_t report_from(struct ic_cases *cases, const char *name, char **ret)
{
    cJSON *skeleton = cJSON_Parse("{\"schema\":\"interopcheck-report\",\"cases\":[],"
                                  "\"summary\":{\"total\":0}}");
    char path[700], err[1024];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    size_t len = 0;
    *ret = NULL;
    if (ic_report_write_atomic(path, skeleton, cases, err, sizeof(err)) == 0) {
        FILE *file = fopen(path, "r");
        *ret = calloc(1, 1 << 22);
        if (file && *ret)
            len = fread(*ret, 1, (1 << 22) - 1, file);
        if (file)
            fclose(file);
    }
    cJSON_Delete(skeleton);
    return len;
}

/* A relay over a fresh source: batches of `batch` cases in arenas of `arena` bytes. */
static void test_relay_sized(struct fixture *f, size_t batch, size_t arena, const char *what)
{
    struct ic_plan_cases direct, relayed;
    struct ic_cases_relay *relay = NULL;
    size_t n = (size_t)cJSON_GetArraySize(f->expected), yielded = 0, same = 0;
    if (ic_plan_cases_open(&direct, &f->plan, &f->catalog, NULL, f->stream_path) < 0 ||
        ic_plan_cases_open(&relayed, &f->plan, &f->catalog, NULL, f->stream_path) < 0) {
        TAP_OK(false, "the sources open");
        return;
    }
    if (ic_cases_relay_start_sized(&relayed, batch, arena, &relay) == 0)
        same = pass_matches(ic_cases_relay_cases(relay), f->expected, &yielded);
    int status = relay ? ic_cases_relay_finish(relay) : IC_EIO;
    TAP_OK(relay && status == 0 && same == n && yielded == n,
           "relay, %s: its pass gives every recorded case, as recorded, in plan order (%zu of %zu "
           "the same, %zu given)",
           what, same, n, yielded);

    char *a = NULL, *b = NULL;
    relay = NULL;
    size_t alen = report_from(&direct.base, "direct.json", &a), blen = 0;
    if (ic_cases_relay_start_sized(&relayed, batch, arena, &relay) == 0) {
        blen = report_from(ic_cases_relay_cases(relay), "relayed.json", &b);
        status = ic_cases_relay_finish(relay);
    }
    TAP_OK(relay && status == 0 && alen > 0 && alen == blen && memcmp(a, b, alen) == 0,
           "relay, %s: the report written from it is byte for byte the source's (%zu and %zu "
           "bytes), texts included",
           what, alen, blen);
    free(a);
    free(b);
    ic_plan_cases_close(&direct);
    ic_plan_cases_close(&relayed);
}

static void test_relay(struct fixture *f)
{
    size_t n = (size_t)cJSON_GetArraySize(f->expected);
    test_relay_sized(f, 256, (size_t)1 << 20, "one batch");
    test_relay_sized(f, 7, (size_t)1 << 20, "batches of 7 cases");
    /* An arena too small for one case: every case spills over to malloc (freed with the
     * batch, which the sanitizer build checks). */
    test_relay_sized(f, 5, 256, "arenas of 256 bytes");

    struct ic_plan_cases source;
    struct ic_cases_relay *relay = NULL;
    if (ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, f->stream_path) < 0 ||
        ic_cases_relay_start_sized(&source, 2, (size_t)1 << 16, &relay) < 0) {
        TAP_OK(false, "a relay starts");
        return;
    }
    /* A reader that stops after three cases, batches ahead still made: the finish stops the
     * thread and waits for it, and a pass again is refused. */
    struct ic_cases *cases = ic_cases_relay_cases(relay);
    const cJSON *c = ic_cases_first(cases);
    for (int i = 0; c && i < 2; i++)
        c = ic_cases_next(cases);
    const cJSON *again = ic_cases_first(cases);
    TAP_OK(c && !again && ic_cases_status(cases) == IC_EINVAL && cases->count == n,
           "relay: a second pass is refused (IC_EINVAL); it counts the source's cases");
    TAP_OK(ic_cases_relay_finish(relay) == IC_EINVAL,
           "relay: a reader that stopped early finishes it, with the pass's status");
    ic_plan_cases_close(&source);

    /* A source that fails (its stream gone) ends the relay's pass with the source's status. */
    relay = NULL;
    size_t yielded = 0;
    if (ic_plan_cases_open(&source, &f->plan, &f->catalog, NULL, "/nonexistent/stream") == 0 &&
        ic_cases_relay_start_sized(&source, 3, (size_t)1 << 16, &relay) == 0) {
        ic_cases_for_each(c, ic_cases_relay_cases(relay)) yielded++;
    }
    int status = relay ? ic_cases_relay_finish(relay) : 0;
    TAP_OK(relay && status == IC_EIO && yielded < n,
           "relay: a source that cannot read its stream ends the pass early with IC_EIO (%zu of "
           "%zu cases given)",
           yielded, n);
    ic_plan_cases_close(&source);
}

static struct fixture fixture;

static void test_all(void)
{
    fixture_catalog(&fixture);
    if (fixture_run(&fixture) == 0) {
        test_passes(&fixture);
        test_expectations(&fixture);
        test_relay(&fixture); /* before the stream is broken */
        test_broken_stream(&fixture);
        test_result_again(&fixture);
    }
    cJSON_Delete(fixture.expected);
    ic_plan_release(&fixture.plan);
}

int main(void)
{
    ic_json_hooks_install(); /* as main does: the relay's arenas are used */
    return test_files_main(tmpdir, TAP_TESTS(test_all));
}
