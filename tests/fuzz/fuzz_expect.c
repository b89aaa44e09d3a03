/* fuzz_expect: the expectations parser and matcher (src/report/ic_expect.c). The input is an
 * expectations file: it is written to a private temporary file, loaded with ic_expect_load
 * and, when it loads, applied to a small fixed report (every outcome, ids with and without a
 * variant), which is then recounted, as `interopcheck report --expect FILE` does.
 *
 * The input also drives the matcher directly, as ic_expect_match(pattern, id) with the first
 * line as the pattern and the second as the id (a report's ids come from a file too), with
 * its promise as the oracle: a pattern without wildcards matches exactly the id it equals,
 * and every id of at most 16 dot-separated parts matches itself. */
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_common.h"
#include "ic_error.h"
#include "ic_expect.h"
#include "ic_report.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fixed report: one case of every outcome that expectations change or leave alone, ids
 * with and without a variant. */
static const struct fixed_case {
    const char *protocol, *producer, *consumer, *device, *dtype, *layout, *variant, *outcome;
} fixed_cases[] = {
    {"dlpack", "numpy", "torch", "cpu", "float32", "contiguous", NULL, "fail"},
    {"dlpack", "numpy", "interopcheck", "cpu", "float32", "flat", "copy", "pass"},
    {"dlpack", "numpy", "torch", "cpu", "int8", "flat", NULL, "crash"},
    {"buffer", "numpy", "numpy", "cpu", "int16", "strided", NULL, "timeout"},
    {"array_interface", "jax", "numpy", "cpu", "bfloat16", "reversed", NULL, "unsupported"},
    {"cuda_array_interface", "cupy", "torch", "cuda", "float16", "offset", NULL, "error"},
    {"array", "torch", "numpy", "cpu", "bool", "empty", NULL, "xfail"},
};

static cJSON *outcome_counts(void)
{
    static const char *const names[] = {"pass",  "fail",  "unsupported", "crash", "timeout",
                                        "error", "xfail", "xpass",       "waived"};
    cJSON *counts = cJSON_CreateObject();
    for (size_t i = 0; counts && i < sizeof(names) / sizeof(names[0]); i++)
        cJSON_AddNumberToObject(counts, names[i], 0);
    return counts;
}

/* What a run writes, cut down to the parts expectations and the recount read: the cases, and
 * a summary with a cell per producer, consumer and device (counts to be recounted). */
static cJSON *fixed_report(void)
{
    cJSON *root = cJSON_CreateObject(), *cases = cJSON_CreateArray();
    cJSON *summary = cJSON_CreateObject(), *protocols = cJSON_CreateObject();
    FUZZ_CHECK(root && cases && summary && protocols);
    cJSON_AddStringToObject(root, "schema", "interopcheck-report");
    cJSON_AddNumberToObject(root, "schema_version", IC_REPORT_SCHEMA_VERSION);
    cJSON_AddItemToObject(root, "cases", cases);
    cJSON_AddItemToObject(root, "summary", summary);
    cJSON_AddNumberToObject(summary, "total", sizeof(fixed_cases) / sizeof(fixed_cases[0]));
    cJSON_AddItemToObject(summary, "outcomes", outcome_counts());
    cJSON_AddItemToObject(summary, "protocols", protocols);
    for (size_t i = 0; i < sizeof(fixed_cases) / sizeof(fixed_cases[0]); i++) {
        const struct fixed_case *f = &fixed_cases[i];
        char id[256];
        snprintf(id, sizeof(id), "%s.%s.%s.%s.%s.%s%s%s", f->protocol, f->producer, f->consumer,
                 f->device, f->dtype, f->layout, f->variant ? "." : "",
                 f->variant ? f->variant : "");
        cJSON *c = cJSON_CreateObject();
        FUZZ_CHECK(c != NULL);
        cJSON_AddStringToObject(c, "id", id);
        cJSON_AddStringToObject(c, "protocol", f->protocol);
        cJSON_AddStringToObject(c, "producer", f->producer);
        cJSON_AddStringToObject(c, "consumer", f->consumer);
        cJSON_AddStringToObject(c, "device", f->device);
        cJSON_AddStringToObject(c, "dtype", f->dtype);
        cJSON_AddStringToObject(c, "layout", f->layout);
        cJSON_AddStringToObject(c, "outcome", f->outcome);
        cJSON_AddItemToArray(cases, c);

        cJSON *protocol = cJSON_GetObjectItemCaseSensitive(protocols, f->protocol);
        if (!protocol) {
            protocol = cJSON_AddObjectToObject(protocols, f->protocol);
            cJSON_AddArrayToObject(protocol, "cells");
            cJSON_AddArrayToObject(protocol, "gaps");
            cJSON_AddItemToObject(protocol, "outcomes", outcome_counts());
        }
        cJSON *cells = cJSON_GetObjectItemCaseSensitive(protocol, "cells"), *cell;
        bool known = false;
        cJSON_ArrayForEach(cell, cells)
        {
            known = known ||
                    (strcmp(cJSON_GetObjectItem(cell, "producer")->valuestring, f->producer) == 0 &&
                     strcmp(cJSON_GetObjectItem(cell, "consumer")->valuestring, f->consumer) == 0 &&
                     strcmp(cJSON_GetObjectItem(cell, "device")->valuestring, f->device) == 0);
        }
        if (known)
            continue; /* one cell per producer, consumer and device, as a run writes */
        cell = cJSON_CreateObject();
        FUZZ_CHECK(cell != NULL);
        cJSON_AddStringToObject(cell, "producer", f->producer);
        cJSON_AddStringToObject(cell, "consumer", f->consumer);
        cJSON_AddStringToObject(cell, "device", f->device);
        cJSON_AddNumberToObject(cell, "total", 0);
        cJSON_AddItemToObject(cell, "outcomes", outcome_counts());
        cJSON_AddItemToArray(cells, cell);
    }
    return root;
}

static cJSON *report;
static char *path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    report = fixed_report();
    path = strdup(fuzz_temp_path("known.txt"));
    FUZZ_CHECK(report && path);
    return 0;
}

/* Parts of an id or pattern (dots + 1), capped at 17: more than the matcher splits. */
static int count_parts(const char *text)
{
    int parts = 1;
    for (; *text && parts <= 16; text++)
        parts += *text == '.';
    return parts;
}

static void fuzz_match(const uint8_t *data, size_t size)
{
    const uint8_t *newline = memchr(data, '\n', size);
    size_t first = newline ? (size_t)(newline - data) : size;
    char *pattern = fuzz_cstring(data, first);
    char *id = newline ? fuzz_cstring(newline + 1, size - first - 1) : fuzz_cstring(data, 0);

    bool matched = ic_expect_match(pattern, id);
    bool plain = strpbrk(pattern, "*?") == NULL;
    if (plain && count_parts(pattern) <= 16 && count_parts(id) <= 16)
        FUZZ_CHECK(matched == (strcmp(pattern, id) == 0));
    if (plain && count_parts(pattern) <= 16)
        FUZZ_CHECK(ic_expect_match(pattern, pattern));
    free(pattern);
    free(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024], unmatched[4096];
    struct ic_expectations *expectations = NULL;

    fuzz_match(data, size);

    fuzz_write_file(path, data, size);
    const char *paths[1] = {path};
    err[0] = '\0';
    if (ic_expect_load(paths, 1, &expectations, err, sizeof(err)) < 0) {
        FUZZ_CHECK(expectations == NULL && err[0] != '\0');
        return 0;
    }
    cJSON *copy = cJSON_Duplicate(report, true);
    FUZZ_CHECK(copy != NULL);
    int changed = ic_expect_apply(expectations, copy, unmatched, sizeof(unmatched));
    FUZZ_CHECK(changed >= 0 && changed <= cJSON_GetArraySize(cJSON_GetObjectItem(copy, "cases")));
    FUZZ_CHECK(memchr(unmatched, '\0', sizeof(unmatched)) != NULL);
    FUZZ_CHECK(ic_report_recount(copy) == 0);
    cJSON_Delete(copy);
    ic_expect_free(expectations);
    return 0;
}
