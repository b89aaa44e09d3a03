/*
 * The findings stage: signatures, grouping, ids, the cases' patterns, the example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_expect.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_text.h"
#include "tap.h"

static void test_signature(void)
{
    char a[240], b[240];
    ic_findings_signature("paddle ignored byte_offset: it read from data (0x55d1f8), not from "
                          "data + byte_offset (0x55d1f8 + 4 = 0x55d1fc); more",
                          "mlx", "paddle", a, sizeof(a));
    ic_findings_signature("paddle ignored byte_offset: it read from data (0x7f0000), not from "
                          "data + byte_offset (0x7f0000 + 16 = 0x7f0010)",
                          "torch", "paddle", b, sizeof(b));
    TAP_OK(strcmp(a, b) == 0 && !strstr(a, "more") && !strstr(a, "0x"),
           "addresses, numbers, the other library and what follows '; ' drop out (%s)", a);
    ic_findings_signature("numpy imported a float64 array as float32", "torch", "numpy", a,
                          sizeof(a));
    ic_findings_signature("numpy imported a complex128 array as complex64", "jax", "numpy", b,
                          sizeof(b));
    TAP_OK(strcmp(a, b) == 0, "dtype names drop out (%s)", a);
    ic_findings_signature("the export says int8 for an int4 array", "torch", "numpy", a, sizeof(a));
    ic_findings_signature("the export says uint8 for a uint4 array", "torch", "numpy", b,
                          sizeof(b));
    TAP_OK(strcmp(a, b) == 0 && strcmp(a, "the export says T for a T array") == 0,
           "the article of a dtype name drops out with it (%s)", a);
    ic_findings_signature("an int8 array is an answer", "torch", "numpy", a, sizeof(a));
    TAP_OK(strcmp(a, "a T array is an answer") == 0, "\"an\" before any other word stays (%s)", a);
    ic_findings_signature("__array__ returned a numpy.float32, not a numpy.ndarray", "tensorflow",
                          "numpy", a, sizeof(a));
    TAP_OK(strstr(a, "numpy.ndarray") != NULL, "a library name that is a module path stays (%s)",
           a);
    ic_findings_signature("PyBUF_ANY_CONTIGUOUS got strides (12, 4), format \"<f\"", "mlx",
                          "pyarrow", a, sizeof(a));
    ic_findings_signature("PyBUF_C_CONTIGUOUS | PyBUF_FORMAT got strides (-3,), format \"e\"",
                          "mlx", "interopcheck", b, sizeof(b));
    TAP_OK(strcmp(a, b) == 0, "requests, stride tuples of any rank and quoted values drop out (%s)",
           a);
    ic_findings_signature("a ValueError", "x", "y", a, sizeof(a));
    ic_findings_signature("a TypeError", "x", "y", b, sizeof(b));
    TAP_OK(strcmp(a, b) != 0, "words that tell causes apart stay");
    /* 6 bytes hold "ab ", two bytes of the quotation mark and the NUL */
    char small[6], repaired[6];
    ic_findings_signature("ab \xe2\x80\x9cq\xe2\x80\x9d", "x", "y", small, sizeof(small));
    memcpy(repaired, small, sizeof(small));
    ic_utf8_repair_in_place(repaired, sizeof(repaired));
    TAP_OK(strcmp(small, "ab ") == 0 && strcmp(repaired, small) == 0,
           "a signature cut in the middle of a character ends on a whole one (\"%s\")", small);
}

/* A case object as a run writes it. */
static cJSON *case_json(const char *id, const char *outcome, const char *rule, const char *side,
                        const char *severity, const char *note)
{
    cJSON *c = cJSON_CreateObject();
    char parts[8][64] = {{0}};
    int n = sscanf(id, "%63[^.].%63[^.].%63[^.].%63[^.].%63[^.].%63[^.].%63s", parts[0], parts[1],
                   parts[2], parts[3], parts[4], parts[5], parts[6]);
    cJSON_AddStringToObject(c, "id", id);
    cJSON_AddStringToObject(c, "protocol", parts[0]);
    cJSON_AddStringToObject(c, "producer", parts[1]);
    cJSON_AddStringToObject(c, "consumer", parts[2]);
    cJSON_AddStringToObject(c, "device", parts[3]);
    cJSON_AddStringToObject(c, "dtype", parts[4]);
    cJSON_AddStringToObject(c, "layout", parts[5]);
    if (n == 7)
        cJSON_AddStringToObject(c, "variant", parts[6]);
    else
        cJSON_AddNullToObject(c, "variant");
    cJSON_AddStringToObject(c, "outcome", outcome);
    if (rule) {
        cJSON_AddStringToObject(c, "rule", rule);
        cJSON_AddStringToObject(c, "side", side);
        cJSON_AddStringToObject(c, "severity", severity);
        cJSON_AddStringToObject(c, "diagnostic", note);
        cJSON *checks = cJSON_AddObjectToObject(c, "checks");
        cJSON *check = cJSON_AddObjectToObject(checks, "contents");
        cJSON_AddStringToObject(check, "status", "fail");
        cJSON_AddStringToObject(check, "rule", rule);
        cJSON_AddStringToObject(check, "side", side);
        cJSON_AddStringToObject(check, "severity", severity);
        cJSON_AddStringToObject(check, "note", note);
    }
    return c;
}

static const cJSON *case_of(const cJSON *report, const char *id)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(report, "cases"))
    {
        if (strcmp(ic_json_string_or(c, "id", ""), id) == 0)
            return c;
    }
    return NULL;
}

static void test_grouping(void)
{
    static const char *const dtypes[] = {"int8", "int16", "float32", "float64"};
    static const char *const producers[] = {"numpy", "torch", "mlx"};
    cJSON *report = cJSON_CreateObject();
    cJSON *cases = cJSON_AddArrayToObject(report, "cases");
    char id[160], note[200];
    int failing = 0;
    /* paddle misreads offset arrays from every producer, in every dtype but float64, which it
     * refuses; the other layouts pass. */
    for (size_t p = 0; p < 3; p++) {
        for (size_t d = 0; d < 4; d++) {
            for (int l = 0; l < 2; l++) {
                snprintf(id, sizeof(id), "dlpack.%s.paddle.cpu.%s.%s", producers[p], dtypes[d],
                         l ? "offset" : "flat");
                snprintf(note, sizeof(note),
                         "paddle ignored byte_offset: it read from data (0x%zx0), not from data "
                         "+ byte_offset",
                         p * 7 + d);
                bool bad = l == 1 && d != 3;
                const char *outcome = bad ? "fail" : d == 3 ? "unsupported" : "pass";
                cJSON_AddItemToArray(cases, case_json(id, outcome, bad ? "exchange.contents" : NULL,
                                                      "consumer", "harmful", note));
                failing += bad;
            }
        }
    }
    /* a crash of another library, with a variant */
    cJSON_AddItemToArray(cases, case_json("buffer.py_ctypes.mlx.cpu.bool.flat.contig", "crash",
                                          "exchange.crash", "consumer", "harmful",
                                          "the worker died with SIGSEGV"));
    /* a nonconformance, and one expected failure of it */
    cJSON_AddItemToArray(cases, case_json("dlpack.torch.numpy.cpu.int8.flat", "fail",
                                          "exchange.refusal", "producer", "nonconformant",
                                          "torch raised TypeError for __dlpack__()"));
    cJSON *xfail =
        case_json("dlpack.torch.numpy.cpu.int16.flat", "xfail", "exchange.refusal", "producer",
                  "nonconformant", "torch raised TypeError for __dlpack__()");
    cJSON *expectation = cJSON_AddObjectToObject(xfail, "expectation");
    cJSON_AddStringToObject(expectation, "observed", "fail");
    cJSON_AddItemToArray(cases, xfail);
    cJSON_AddItemToArray(
        cases, case_json("dlpack.torch.numpy.cpu.int32.flat", "pass", NULL, NULL, NULL, NULL));

    TAP_OK(ic_findings_attach_report(report) == 0, "findings are attached");
    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    TAP_OK(cJSON_GetArraySize(findings) == 3, "three causes, three findings (%d)",
           cJSON_GetArraySize(findings));
    const cJSON *first = cJSON_GetArrayItem(findings, 0);
    const char *first_id = ic_json_string_or(first, "id", "");
    TAP_OK(strncmp(first_id, "paddle.exchange.contents.", 25) == 0 &&
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(first, "count")) == failing,
           "the harmful finding with most cases leads: %s, %d cases across producers and dtypes",
           first_id, failing);
    TAP_OK(strcmp(ic_json_string_or(first, "culprit", ""), "paddle") == 0 &&
               strcmp(ic_json_string_or(first, "side", ""), "consumer") == 0,
           "its culprit is the consumer that broke the rule");
    TAP_OK(strcmp(ic_json_string_or(first, "example", ""),
                  "dlpack.numpy.paddle.cpu.float32.offset") == 0,
           "its example is the plainest case: numpy, float32 (%s)",
           ic_json_string_or(first, "example", ""));

    /* The patterns match every case of the finding and no pass. */
    const cJSON *patterns = cJSON_GetObjectItemCaseSensitive(first, "cases");
    bool exact = true;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *cid = ic_json_string_or(c, "id", "");
        bool matched = false;
        const cJSON *pattern;
        cJSON_ArrayForEach(pattern, patterns) matched =
            matched || ic_expect_match(cJSON_GetStringValue(pattern), cid);
        bool in = strcmp(ic_json_string_or(c, "finding", ""), first_id) == 0;
        const char *outcome = ic_json_string_or(c, "outcome", "");
        if (in != matched && !(matched && strcmp(outcome, "unsupported") == 0))
            exact = false;
    }
    char *text = cJSON_PrintUnformatted(patterns);
    TAP_OK(exact && cJSON_GetArraySize(patterns) == 1,
           "one pattern covers the finding's cases and no pass: %s", text);
    free(text);

    const cJSON *crash = case_of(report, "buffer.py_ctypes.mlx.cpu.bool.flat.contig");
    const cJSON *f = ic_findings_find(report, ic_json_string(crash, "finding"));
    TAP_OK(f && strcmp(ic_json_string_or(f, "check", ""), "crash") == 0 &&
               cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "outcomes"),
                                                "crash"),
           "a crash is its own finding, counted as a crash");
    const cJSON *x = case_of(report, "dlpack.torch.numpy.cpu.int16.flat");
    const cJSON *y = case_of(report, "dlpack.torch.numpy.cpu.int8.flat");
    TAP_OK(ic_json_string(x, "finding") && ic_json_string(y, "finding") &&
               strcmp(ic_json_string(x, "finding"), ic_json_string(y, "finding")) == 0,
           "an xfail counts by what it was observed as, in the same finding");
    TAP_OK(!ic_json_string(case_of(report, "dlpack.torch.numpy.cpu.int32.flat"), "finding"),
           "a pass has no finding");

    /* The id depends on the cause only: the same report again gives the same ids, and a
     * reproducer already there is kept. */
    cJSON_AddStringToObject((cJSON *)first, "reproducer", "print('hi')");
    char kept[160];
    snprintf(kept, sizeof(kept), "%s", first_id);
    TAP_OK(ic_findings_attach_report(report) == 0, "findings are attached again");
    const cJSON *again = ic_findings_find(report, kept);
    TAP_OK(again && strcmp(ic_json_string_or(again, "reproducer", ""), "print('hi')") == 0,
           "ids are stable, and a reproducer stays with its finding");
    cJSON_Delete(report);
}

int main(void)
{
    test_signature();
    test_grouping();
    return tap_done();
}
