#include "ic_resume.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_config.h"
#include "ic_paths.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_outputs.h"
#include "ic_report.h"

struct ic_resume_case {
    const char *id;
    const cJSON *json;
};

static int ic_resume_case_compare(const void *a, const void *b)
{
    return strcmp(((const struct ic_resume_case *)a)->id, ((const struct ic_resume_case *)b)->id);
}

static char *ic_resume_keep(struct ic_resume *resume, const char *text)
{
    char *copy = strdup(text);
    if (copy && ic_strings_push(&resume->strings, copy) < 0) {
        free(copy);
        copy = NULL;
    }
    return copy;
}

/* The run's filters, seed, timeout and probe directories, into the options. */
static int ic_resume_options(struct ic_resume *resume, const cJSON *run, struct ic_options *opts,
                             char *err, size_t err_size)
{
    static const char *const keys[] = {"producer", "consumer", "protocol",
                                       "dtype",    "layout",   "device"};
    struct ic_name_list *lists[] = {&opts->producers, &opts->consumers, &opts->protocols,
                                    &opts->dtypes,    &opts->layouts,   &opts->devices};
    const cJSON *filters = cJSON_GetObjectItemCaseSensitive(run, "filters");
    const char *seed = ic_json_string(run, "seed");
    char *end = NULL;
    if (!cJSON_IsObject(filters) || !seed) {
        snprintf(err, err_size, "the report does not record its run's selection and seed");
        return IC_EINVAL;
    }
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const cJSON *value;
        cJSON_ArrayForEach(value, cJSON_GetObjectItemCaseSensitive(filters, keys[k]))
        {
            if (!cJSON_IsString(value) || ic_name_list_add(lists[k], value->valuestring) < 0) {
                snprintf(err, err_size, "the report's %s filter cannot be used", keys[k]);
                return IC_EINVAL;
            }
        }
    }
    opts->all = true; /* no filter recorded means the whole matrix */
    opts->seed = strtoull(seed, &end, 10);
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(run, "size");
    if (cJSON_IsNumber(size) && size->valuedouble >= 1)
        opts->size = (int64_t)size->valuedouble;
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(run, "timeout_s");
    if (cJSON_IsNumber(timeout) && timeout->valuedouble > 0)
        opts->timeout_s = timeout->valuedouble;
    /* The built-in directory is always there; the others the run had are added again, after
     * those given now, into an array of the resumption's own (the options' array is the
     * caller's). */
    char builtin[PATH_MAX], resolved[PATH_MAX];
    if (!realpath(ic_paths_probe_dir(), builtin))
        builtin[0] = '\0';
    for (int i = 0; i < opts->nprobe_dirs; i++) {
        if (ic_strings_push(&resume->probe_dirs, opts->probe_dirs[i]) < 0)
            return IC_ENOMEM;
    }
    const cJSON *dir;
    cJSON_ArrayForEach(dir, cJSON_GetObjectItemCaseSensitive(run, "probe_dirs"))
    {
        if (!cJSON_IsString(dir) ||
            (realpath(dir->valuestring, resolved) && strcmp(resolved, builtin) == 0))
            continue;
        char *kept = ic_resume_keep(resume, dir->valuestring);
        if (!kept || ic_strings_push(&resume->probe_dirs, kept) < 0)
            return IC_ENOMEM;
    }
    opts->probe_dirs = resume->probe_dirs.items;
    opts->nprobe_dirs = resume->probe_dirs.count;
    opts->probe_dirs_capacity = resume->probe_dirs.capacity;
    return 0;
}

/* Whether the report's case `c` is one --last-failed runs again: its outcome (after
 * expectations: an expected failure is not one) is fail, crash, timeout or error. */
static bool ic_case_failed(const cJSON *c)
{
    enum ic_outcome outcome;
    if (ic_outcome_from_name(ic_json_string_or(c, "outcome", ""), &outcome) < 0)
        return false;
    return ic_outcome_is_failure(outcome) || outcome == IC_OUTCOME_ERROR;
}

/* The finished cases of the report (only the failed ones: `failed_only`), sorted by id for
 * lookup. */
static int ic_resume_index(struct ic_resume *resume, bool failed_only)
{
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(resume->report, "cases");
    size_t count = (size_t)cJSON_GetArraySize(cases);
    resume->cases = calloc(count ? count : 1, sizeof(*resume->cases));
    if (!resume->cases)
        return IC_ENOMEM;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *id = ic_json_string(c, "id");
        if (id && (!failed_only || ic_case_failed(c)))
            resume->cases[resume->ncases++] = (struct ic_resume_case){id, c};
    }
    if (resume->ncases)
        qsort(resume->cases, resume->ncases, sizeof(*resume->cases), ic_resume_case_compare);
    return 0;
}

int ic_resume_open(const char *path, struct ic_options *opts, struct ic_resume *resume, char *err,
                   size_t err_size)
{
    memset(resume, 0, sizeof(*resume));
    int rc = ic_report_read(path, &resume->report, err, err_size);
    if (rc < 0)
        return rc;
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(resume->report, "run");
    const char *last_failed = ic_json_string(run, "last_failed");
    if (last_failed) {
        /* Its filters name the failed cases' libraries, not the cases: run those again. */
        snprintf(err, err_size,
                 "%s is of a --last-failed run, which cannot be resumed: run "
                 "'interopcheck --last-failed %s' again",
                 path, last_failed);
        return IC_EINVAL;
    }
    rc = ic_resume_options(resume, run, opts, err, err_size);
    if (rc == 0)
        rc = ic_resume_index(resume, false);
    if (rc == 0 && !opts->output) {
        char output[PATH_MAX];
        /* FILE.jsonl was the stream of FILE.json */
        ic_output_sibling(path, ".json", output, sizeof(output));
        opts->output = ic_resume_keep(resume, output);
        if (!opts->output)
            rc = IC_ENOMEM;
    }
    if (rc == IC_ENOMEM)
        snprintf(err, err_size, "out of memory while reading %s", path);
    return rc;
}

/* The result recorded for a case, as observed (an expectation's verdict is applied again at
 * the end of the resumed run). */
static int ic_resume_result(const cJSON *json, struct ic_result *res)
{
    cJSON *copy = cJSON_Duplicate(json, true);
    if (!copy)
        return IC_ENOMEM;
    const char *observed =
        ic_json_string(cJSON_GetObjectItemCaseSensitive(copy, "expectation"), "observed");
    if (observed)
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "outcome", cJSON_CreateString(observed));
    int rc = ic_result_from_json(copy, res);
    cJSON_Delete(copy);
    return rc;
}

int ic_resume_restore(const struct ic_resume *resume, struct ic_plan *plan, char *err,
                      size_t err_size)
{
    int restored = 0;
    struct ic_result *res = malloc(sizeof(*res)); /* 7 KB: one, reused */
    if (!res) {
        snprintf(err, err_size, "out of memory");
        return IC_ENOMEM;
    }
    for (size_t i = 0; i < plan->count; i++) {
        struct ic_planned *item = &plan->items[i];
        char id[IC_CASE_ID_MAX];
        if (!item->run || ic_case_format_id(&item->c, id, sizeof(id)) < 0)
            continue;
        struct ic_resume_case key = {id, NULL};
        const struct ic_resume_case *found =
            resume->ncases
                ? bsearch(&key, resume->cases, resume->ncases, sizeof(key), ic_resume_case_compare)
                : NULL;
        if (!found)
            continue;
        if (ic_resume_result(found->json, res) < 0) {
            snprintf(err, err_size, "the recorded result of %s cannot be read", id);
            free(res);
            return IC_EINVAL;
        }
        if (ic_result_pack(res, &item->result) < 0) {
            snprintf(err, err_size, "out of memory");
            free(res);
            return IC_ENOMEM;
        }
        item->run = false;
        restored++;
    }
    free(res);
    return restored;
}

/* Adds `name` to `list` unless it is there. IC_ENOMEM. */
static int ic_name_list_add_once(struct ic_name_list *list, const char *name)
{
    for (int i = 0; i < list->count; i++) {
        if (strcmp(list->items[i], name) == 0)
            return 0;
    }
    return ic_name_list_add(list, name);
}

/* Narrows the options' producers and consumers to the libraries of the failed cases, so that
 * discovery imports those only. */
static int ic_last_failed_libraries(const struct ic_resume *resume, struct ic_options *opts)
{
    ic_name_list_release(&opts->producers);
    ic_name_list_release(&opts->consumers);
    for (size_t i = 0; i < resume->ncases; i++) {
        struct ic_case c;
        if (ic_case_parse_id(resume->cases[i].id, &c) < 0)
            continue;
        if (ic_name_list_add_once(&opts->producers, c.producer) < 0 ||
            ic_name_list_add_once(&opts->consumers, c.consumer) < 0)
            return IC_ENOMEM;
    }
    return 0;
}

int ic_last_failed_open(const char *path, struct ic_options *opts, struct ic_resume *resume,
                        char *err, size_t err_size)
{
    memset(resume, 0, sizeof(*resume));
    int rc = ic_report_read(path, &resume->report, err, err_size);
    if (rc < 0)
        return rc;
    rc = ic_resume_options(resume, cJSON_GetObjectItemCaseSensitive(resume->report, "run"), opts,
                           err, err_size);
    if (rc == 0)
        rc = ic_resume_index(resume, true);
    if (rc == 0 && resume->ncases == 0) {
        snprintf(err, err_size,
                 "nothing to run again: no case of %s failed, crashed, timed out or erred", path);
        return IC_ENOTFOUND;
    }
    if (rc == 0)
        rc = ic_last_failed_libraries(resume, opts);
    if (rc == IC_ENOMEM)
        snprintf(err, err_size, "out of memory while reading %s", path);
    return rc;
}

/* Whether `id` is among the cases REPORT failed. */
static bool ic_failed_in_report(const char *id, const void *context)
{
    const struct ic_resume *resume = context;
    struct ic_resume_case key = {id, NULL};
    return resume->ncases &&
           bsearch(&key, resume->cases, resume->ncases, sizeof(key), ic_resume_case_compare);
}

int ic_last_failed_narrow(const struct ic_resume *resume, struct ic_plan *plan)
{
    return (int)ic_plan_retain(plan, ic_failed_in_report, resume);
}

void ic_resume_close(struct ic_resume *resume)
{
    cJSON_Delete(resume->report);
    free(resume->cases);
    for (int i = 0; i < resume->strings.count; i++)
        free((void *)resume->strings.items[i]);
    ic_strings_release(&resume->strings);
    ic_strings_release(&resume->probe_dirs);
    memset(resume, 0, sizeof(*resume));
}
