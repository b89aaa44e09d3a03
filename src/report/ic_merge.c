#include "ic_merge.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_report.h"
#include "ic_result.h"
#include "ic_text.h"

/* Room kept at the end of a generated id for a "-NN" suffix. */
#define IC_ID_SUFFIX_ROOM 8
/* Longest part of an id made from one value (a version, a host). */
#define IC_ID_PART_MAX    48

/* One environment of the merge: a single report, or one entry of a merged input. */
struct ic_merge_env {
    const cJSON *tool, *run, *environment; /* borrowed from the input */
    int input;
    const char *carried_id; /* its id in a merged input; NULL for a single run */
    bool add_host;
    char id[IC_ENVIRONMENT_ID_MAX];
};

static const cJSON *ic_get(const cJSON *object, const char *key)
{
    return ic_json_get(object, key);
}

static bool ic_environment_id_is_valid(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len >= IC_ENVIRONMENT_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = id[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* --- Reading the inputs --------------------------------------------------------------------- */

static bool ic_env_objects_ok(const cJSON *holder)
{
    return cJSON_IsObject(ic_get(holder, "tool")) && cJSON_IsObject(ic_get(holder, "run")) &&
           cJSON_IsObject(ic_get(holder, "environment"));
}

/* Adds the environments of one input to `envs` (grown as needed) after checking that the
 * input is something a merge can take. */
static int ic_merge_collect(const cJSON *report, const char *name, int input,
                            struct ic_merge_env **envs, int *count, char *err, size_t err_size)
{
    const cJSON *environments = ic_get(report, "environments");
    const cJSON *cases = ic_get(report, "cases");
    int first = *count;
    int adding = cJSON_IsArray(environments) ? cJSON_GetArraySize(environments) : 1;

    if (environments && (!cJSON_IsArray(environments) || adding == 0)) {
        snprintf(err, err_size, "%s: \"environments\" is not a list of environments", name);
        return IC_EINVAL;
    }
    struct ic_merge_env *grown = realloc(*envs, (size_t)(*count + adding) * sizeof(**envs));
    if (!grown) {
        snprintf(err, err_size, "out of memory while merging %s", name);
        return IC_ENOMEM;
    }
    *envs = grown;
    if (!environments) {
        if (!ic_env_objects_ok(report)) {
            snprintf(err, err_size, "%s lacks its tool, run or environment", name);
            return IC_EINVAL;
        }
        grown[(*count)++] = (struct ic_merge_env){.tool = ic_get(report, "tool"),
                                                  .run = ic_get(report, "run"),
                                                  .environment = ic_get(report, "environment"),
                                                  .input = input};
    } else {
        const cJSON *entry;
        cJSON_ArrayForEach(entry, environments)
        {
            const char *id = ic_json_string(entry, "id");
            if (!id || !ic_environment_id_is_valid(id) || !ic_env_objects_ok(entry)) {
                snprintf(err, err_size,
                         "%s: an environment lacks a valid id ([a-z0-9_-]+), or its tool, run or "
                         "environment",
                         name);
                return IC_EINVAL;
            }
            for (int i = first; i < *count; i++) {
                if (strcmp(grown[i].carried_id, id) == 0) {
                    snprintf(err, err_size, "%s lists the environment '%s' twice", name, id);
                    return IC_EINVAL;
                }
            }
            grown[(*count)++] = (struct ic_merge_env){.tool = ic_get(entry, "tool"),
                                                      .run = ic_get(entry, "run"),
                                                      .environment = ic_get(entry, "environment"),
                                                      .input = input,
                                                      .carried_id = id};
        }
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *id = ic_json_string(c, "id");
        if (!cJSON_IsObject(c) || !id || !ic_json_string(c, "outcome")) {
            snprintf(err, err_size, "%s has a case without an id or an outcome", name);
            return IC_EINVAL;
        }
        if (!environments)
            continue;
        const char *env = ic_json_string(c, "environment");
        bool listed = false;
        for (int i = first; env && i < *count && !listed; i++)
            listed = strcmp(grown[i].carried_id, env) == 0;
        if (!listed) {
            /* Both come from the file: escaped, as the message goes to a terminal. */
            char shown_id[300], shown_env[200];
            ic_text_for_terminal(shown_id, sizeof(shown_id), id);
            ic_text_for_terminal(shown_env, sizeof(shown_env), env ? env : "(none)");
            snprintf(err, err_size,
                     "%s: the case %s names the environment '%s', which the report does not list",
                     name, shown_id, shown_env);
            return IC_EINVAL;
        }
    }
    return 0;
}

/* --- Environment ids ------------------------------------------------------------------------ */

/* Appends a part made of `prefix` and `text`: lower case, anything outside [a-z0-9] becomes
 * '_', runs of '_' collapse, and the part is cut at IC_ID_PART_MAX. */
static void ic_id_append(char *id, const char *prefix, const char *text)
{
    char raw[2 * IC_ID_PART_MAX], part[IC_ID_PART_MAX + 1];
    size_t n = 0;
    snprintf(raw, sizeof(raw), "%s%s", prefix, text);
    for (const char *p = raw; *p && n < IC_ID_PART_MAX; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            ch = '_';
        if (ch == '_' && (n == 0 || part[n - 1] == '_'))
            continue;
        part[n++] = ch;
    }
    while (n && part[n - 1] == '_')
        n--;
    part[n] = '\0';
    if (n == 0)
        return;
    size_t used = strlen(id);
    size_t room = IC_ENVIRONMENT_ID_MAX - IC_ID_SUFFIX_ROOM;
    if (used + (used ? 1 : 0) + n >= room)
        return; /* an id of this length is distinct enough; the suffix settles the rest */
    snprintf(id + used, IC_ENVIRONMENT_ID_MAX - used, "%s%s", used ? "-" : "", part);
}

static const char *ic_env_machine(const struct ic_merge_env *env)
{
    const char *machine = ic_json_string(ic_get(env->environment, "platform"), "machine");
    return machine ? machine : "";
}

static const char *ic_env_host(const struct ic_merge_env *env)
{
    const char *host = ic_json_string(ic_get(env->environment, "platform"), "host");
    return host && *host ? host : "host";
}

static const char *ic_env_python(const struct ic_merge_env *env)
{
    const char *version = ic_json_string(ic_get(env->environment, "python"), "version");
    return version ? version : "";
}

static const char *ic_env_device(const struct ic_merge_env *env)
{
    const cJSON *cuda = ic_get(ic_get(env->environment, "devices"), "cuda");
    return cJSON_IsTrue(ic_get(cuda, "available")) ? "cuda" : "cpu";
}

/* The version of a library the environment loaded, or NULL. */
static const char *ic_env_library_version(const struct ic_merge_env *env, const char *library)
{
    const cJSON *lib;
    cJSON_ArrayForEach(lib, ic_get(env->environment, "libraries"))
    {
        const char *name = ic_json_string(lib, "name");
        if (name && strcmp(name, library) == 0) {
            const char *status = ic_json_string(lib, "status");
            return status && strcmp(status, "loaded") == 0 ? ic_json_string(lib, "version") : NULL;
        }
    }
    return NULL;
}

static bool ic_values_differ(const struct ic_merge_env *envs, int count,
                             const char *(*value)(const struct ic_merge_env *))
{
    for (int i = 1; i < count; i++) {
        if (strcmp(value(&envs[i]), value(&envs[0])) != 0)
            return true;
    }
    return false;
}

static bool ic_library_versions_differ(const struct ic_merge_env *envs, int count,
                                       const char *library)
{
    const char *seen = NULL;
    for (int i = 0; i < count; i++) {
        const char *version = ic_env_library_version(&envs[i], library);
        if (!version)
            continue;
        if (seen && strcmp(seen, version) != 0)
            return true;
        seen = version;
    }
    return false;
}

/* Whether `library` is the name of an earlier library entry of an environment before `env`
 * (or earlier in `env` itself), so each library is considered once, in first-seen order. */
static bool ic_library_seen_before(const struct ic_merge_env *envs, int env, const cJSON *entry,
                                   const char *library)
{
    for (int i = 0; i <= env; i++) {
        const cJSON *lib;
        cJSON_ArrayForEach(lib, ic_get(envs[i].environment, "libraries"))
        {
            if (i == env && lib == entry)
                return false;
            const char *name = ic_json_string(lib, "name");
            if (name && strcmp(name, library) == 0)
                return true;
        }
    }
    return false;
}

/* Whether another environment of envs[0..count) has the id `id`. */
static bool ic_id_taken(const struct ic_merge_env *envs, int count, int self, const char *id)
{
    for (int i = 0; i < count; i++) {
        if (i != self && strcmp(envs[i].id, id) == 0)
            return true;
    }
    return false;
}

static void ic_merge_make_ids(struct ic_merge_env *envs, int count)
{
    bool machine = ic_values_differ(envs, count, ic_env_machine);
    bool python = ic_values_differ(envs, count, ic_env_python);
    bool device = ic_values_differ(envs, count, ic_env_device);

    for (int e = 0; e < count; e++) {
        struct ic_merge_env *env = &envs[e];
        env->id[0] = '\0';
        if (env->carried_id) {
            snprintf(env->id, sizeof(env->id), "%s", env->carried_id);
            continue;
        }
        if (machine)
            ic_id_append(env->id, "", ic_env_machine(env));
        if (python)
            ic_id_append(env->id, "py", ic_env_python(env));
        if (device)
            ic_id_append(env->id, "", ic_env_device(env));
        /* Libraries in first-seen order over every environment, so that the parts of every
         * id come in the same order. */
        for (int i = 0; i < count; i++) {
            const cJSON *lib;
            cJSON_ArrayForEach(lib, ic_get(envs[i].environment, "libraries"))
            {
                const char *name = ic_json_string(lib, "name");
                if (!name || ic_library_seen_before(envs, i, lib, name) ||
                    !ic_library_versions_differ(envs, count, name))
                    continue;
                const char *version = ic_env_library_version(env, name);
                if (!version)
                    continue;
                char prefix[IC_ID_PART_MAX + 2];
                snprintf(prefix, sizeof(prefix), "%s_", name);
                ic_id_append(env->id, prefix, version);
            }
        }
    }
    /* The host only where the stable parts do not tell environments apart. Decided for all
     * before any id changes, so the outcome does not depend on the order of the inputs. */
    for (int e = 0; e < count; e++)
        envs[e].add_host =
            !envs[e].carried_id && (!envs[e].id[0] || ic_id_taken(envs, count, e, envs[e].id));
    for (int e = 0; e < count; e++) {
        if (envs[e].add_host)
            ic_id_append(envs[e].id, "", ic_env_host(&envs[e]));
        if (!envs[e].id[0])
            snprintf(envs[e].id, sizeof(envs[e].id), "env");
    }
    /* Whatever still collides: the first keeps its id, later ones get -2, -3, ... */
    for (int e = 1; e < count; e++) {
        if (!ic_id_taken(envs, e, e, envs[e].id))
            continue;
        char base[IC_ENVIRONMENT_ID_MAX];
        snprintf(base, sizeof(base), "%.*s", IC_ENVIRONMENT_ID_MAX - IC_ID_SUFFIX_ROOM, envs[e].id);
        int n = 2;
        do
            snprintf(envs[e].id, sizeof(envs[e].id), "%s-%d", base, n++);
        while (ic_id_taken(envs, e, e, envs[e].id));
    }
}

/* --- Building the merged report ------------------------------------------------------------- */

/* A copy of `object` with "environment": env placed after the key `after` (at the end when
 * `after` is absent); an "environment" it had is replaced. */
static cJSON *ic_tagged_copy(const cJSON *object, const char *after, const char *env)
{
    cJSON *copy = cJSON_CreateObject();
    bool placed = false;
    const cJSON *item;
    if (!copy)
        return NULL;
    cJSON_ArrayForEach(item, object)
    {
        if (strcmp(item->string, "environment") == 0)
            continue;
        cJSON *dup = cJSON_Duplicate(item, true);
        if (!dup || !cJSON_AddItemToObject(copy, item->string, dup)) {
            cJSON_Delete(dup);
            goto fail;
        }
        if (!placed && strcmp(item->string, after) == 0) {
            if (!cJSON_AddStringToObject(copy, "environment", env))
                goto fail;
            placed = true;
        }
    }
    if (!placed && !cJSON_AddStringToObject(copy, "environment", env))
        goto fail;
    return copy;
fail:
    cJSON_Delete(copy);
    return NULL;
}

/* The id an input's item belongs under: the input's own environment for a single report, or
 * the new id of the environment the item names in a merged one. */
static const char *ic_merge_env_of(const struct ic_merge_env *envs, int count, int input,
                                   const cJSON *item)
{
    const char *named = ic_json_string(item, "environment");
    for (int i = 0; i < count; i++) {
        if (envs[i].input != input)
            continue;
        if (!envs[i].carried_id || (named && strcmp(envs[i].carried_id, named) == 0))
            return envs[i].id;
    }
    return NULL;
}

static cJSON *ic_zero_counts(void)
{
    cJSON *counts = cJSON_CreateObject();
    for (int o = 0; counts && o < IC_OUTCOME_COUNT; o++) {
        if (!cJSON_AddNumberToObject(counts, ic_outcome_name(o), 0)) {
            cJSON_Delete(counts);
            return NULL;
        }
    }
    return counts;
}

static void ic_add_counts(cJSON *into, const cJSON *from)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, from)
    {
        cJSON *target = ic_json_get(into, item->string);
        if (target && cJSON_IsNumber(item))
            cJSON_SetNumberValue(target, target->valuedouble + item->valuedouble);
    }
}

/* Appends tagged copies of an input's cells or gaps (`list`) to the merged protocol entry. */
static int ic_merge_tagged_list(cJSON *into, const cJSON *list, const struct ic_merge_env *envs,
                                int count, int input)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, list)
    {
        const char *env = ic_merge_env_of(envs, count, input, item);
        if (!env)
            return IC_EINVAL;
        cJSON *copy = ic_tagged_copy(item, "device", env);
        if (!copy || !cJSON_AddItemToArray(into, copy)) {
            cJSON_Delete(copy);
            return IC_ENOMEM;
        }
    }
    return 0;
}

static int ic_merge_summary(cJSON *merged, const cJSON *const *reports, int nreports,
                            const struct ic_merge_env *envs, int count)
{
    cJSON *summary = cJSON_AddObjectToObject(merged, "summary");
    /* Keys in the order of a single report: the total first, set once the cases are counted. */
    cJSON *total = summary ? cJSON_AddNumberToObject(summary, "total", 0) : NULL;
    cJSON *totals = ic_zero_counts();
    if (!total || !totals) {
        cJSON_Delete(totals);
        return IC_ENOMEM;
    }
    cJSON_AddItemToObject(summary, "outcomes", totals);
    cJSON *protocols = cJSON_AddObjectToObject(summary, "protocols");
    if (!protocols)
        return IC_ENOMEM;
    for (int r = 0; r < nreports; r++) {
        const cJSON *entry;
        cJSON_ArrayForEach(entry, ic_get(ic_get(reports[r], "summary"), "protocols"))
        {
            cJSON *target = ic_json_get(protocols, entry->string);
            if (!target) {
                cJSON *counts = ic_zero_counts();
                target = cJSON_AddObjectToObject(protocols, entry->string);
                if (!target || !counts || !cJSON_AddArrayToObject(target, "cells") ||
                    !cJSON_AddArrayToObject(target, "gaps")) {
                    cJSON_Delete(counts);
                    return IC_ENOMEM;
                }
                cJSON_AddItemToObject(target, "outcomes", counts);
            }
            int rc = ic_merge_tagged_list(ic_json_get(target, "cells"), ic_get(entry, "cells"),
                                          envs, count, r);
            if (rc == 0)
                rc = ic_merge_tagged_list(ic_json_get(target, "gaps"), ic_get(entry, "gaps"), envs,
                                          count, r);
            if (rc < 0)
                return rc;
            ic_add_counts(ic_json_get(target, "outcomes"), ic_get(entry, "outcomes"));
        }
    }
    /* The totals come from the cases themselves, the one count nothing can contradict. */
    size_t counts[IC_OUTCOME_COUNT] = {0}, ncases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, ic_get(merged, "cases"))
    {
        enum ic_outcome outcome;
        const char *name = ic_json_string(c, "outcome");
        ncases++;
        if (name && ic_outcome_from_name(name, &outcome) == 0)
            counts[outcome]++;
    }
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        cJSON_SetNumberValue(ic_json_get(totals, ic_outcome_name(o)), (double)counts[o]);
    cJSON_SetNumberValue(total, (double)ncases);
    return 0;
}

/* Copies an environment's tool, run and environment objects into `object`. */
static int ic_merge_add_environment(cJSON *object, const struct ic_merge_env *env)
{
    const char *const keys[] = {"tool", "run", "environment"};
    const cJSON *parts[] = {env->tool, env->run, env->environment};
    for (int k = 0; k < 3; k++) {
        cJSON *dup = cJSON_Duplicate(parts[k], true);
        if (!dup || !cJSON_AddItemToObject(object, keys[k], dup)) {
            cJSON_Delete(dup);
            return IC_ENOMEM;
        }
    }
    return 0;
}

static int ic_merge_build(const cJSON *const *reports, int nreports,
                          const struct ic_merge_env *envs, int count, cJSON **ret)
{
    cJSON *merged = cJSON_CreateObject();
    int rc = IC_ENOMEM;
    if (!merged || !cJSON_AddStringToObject(merged, "schema", "interopcheck-report") ||
        !cJSON_AddNumberToObject(merged, "schema_version", IC_REPORT_SCHEMA_VERSION))
        goto fail;
    if (ic_merge_add_environment(merged, &envs[0]) < 0)
        goto fail;
    cJSON *environments = cJSON_AddArrayToObject(merged, "environments");
    if (!environments)
        goto fail;
    for (int e = 0; e < count; e++) {
        cJSON *entry = cJSON_CreateObject();
        if (!entry || !cJSON_AddItemToArray(environments, entry)) {
            cJSON_Delete(entry);
            goto fail;
        }
        if (!cJSON_AddStringToObject(entry, "id", envs[e].id) ||
            ic_merge_add_environment(entry, &envs[e]) < 0)
            goto fail;
    }
    cJSON *cases = cJSON_AddArrayToObject(merged, "cases");
    if (!cases)
        goto fail;
    for (int r = 0; r < nreports; r++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, ic_get(reports[r], "cases"))
        {
            const char *env = ic_merge_env_of(envs, count, r, c);
            cJSON *copy = env ? ic_tagged_copy(c, "id", env) : NULL;
            if (!env) {
                rc = IC_EINVAL;
                goto fail;
            }
            if (!copy || !cJSON_AddItemToArray(cases, copy)) {
                cJSON_Delete(copy);
                goto fail;
            }
        }
    }
    rc = ic_merge_summary(merged, reports, nreports, envs, count);
    if (rc < 0)
        goto fail;
    /* The inputs' findings, for their reproducers; the findings are made again over the merged
     * cases, and keep the reproducer of an input finding with the same id. */
    cJSON *findings = cJSON_AddArrayToObject(merged, "findings");
    rc = findings ? 0 : IC_ENOMEM;
    for (int r = 0; r < nreports && rc == 0; r++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, ic_get(reports[r], "findings"))
        {
            if (ic_findings_find(merged, ic_json_string(f, "id")))
                continue;
            cJSON *copy = cJSON_Duplicate(f, true);
            if (!copy || !cJSON_AddItemToArray(findings, copy)) {
                cJSON_Delete(copy);
                rc = IC_ENOMEM;
                break;
            }
        }
    }
    if (rc == 0)
        rc = ic_findings_attach_report(merged);
    if (rc < 0)
        goto fail;
    *ret = merged;
    return 0;
fail:
    cJSON_Delete(merged);
    return rc;
}

int ic_merge_reports(const cJSON *const *reports, const char *const *names, int count, cJSON **ret,
                     char *err, size_t err_size)
{
    struct ic_merge_env *envs = NULL;
    int nenvs = 0, rc = 0;
    if (count < 1) {
        snprintf(err, err_size, "nothing to merge");
        return IC_EINVAL;
    }
    for (int r = 0; r < count && rc == 0; r++)
        rc = ic_merge_collect(reports[r], names[r], r, &envs, &nenvs, err, err_size);
    if (rc == 0) {
        ic_merge_make_ids(envs, nenvs);
        rc = ic_merge_build(reports, count, envs, nenvs, ret);
        if (rc < 0)
            snprintf(err, err_size, "%s while merging",
                     rc == IC_ENOMEM ? "out of memory" : "an item without an environment");
    }
    free(envs);
    return rc;
}
