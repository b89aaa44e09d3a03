#include "ic_report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_stream.h"
#include "ic_text.h"

static const char *const ic_library_state_names[] = {
    [IC_LIBRARY_FOUND] = "not_loaded",
    [IC_LIBRARY_LOADED] = "loaded",
    [IC_LIBRARY_NOT_INSTALLED] = "not_installed",
    [IC_LIBRARY_IMPORT_ERROR] = "import_error",
    [IC_LIBRARY_IMPORT_CRASH] = "import_crash",
    [IC_LIBRARY_INVALID] = "invalid_probe",
};

static cJSON *ic_protocol_names(uint32_t set)
{
    cJSON *list = cJSON_CreateArray();
    for (int p = 0; list && p < IC_PROTOCOL_COUNT; p++) {
        if ((set & (1u << p)) &&
            !cJSON_AddItemToArray(list, cJSON_CreateString(ic_protocol_id(p)))) {
            cJSON_Delete(list);
            return NULL;
        }
    }
    return list;
}

cJSON *ic_report_libraries(const struct ic_catalog *catalog)
{
    cJSON *libs = cJSON_CreateArray();
    for (int i = 0; libs && i < catalog->count; i++) {
        const struct ic_library *lib = &catalog->libs[i];
        cJSON *item = cJSON_CreateObject();
        if (!item || !cJSON_AddItemToArray(libs, item)) {
            cJSON_Delete(item);
            goto fail;
        }
        bool loaded = lib->state == IC_LIBRARY_LOADED;
        /* Both were filled by whoever met the library first; repaired here in case a plain
         * snprintf cut a character, so the report stays UTF-8. */
        char version[sizeof(lib->version)], error[sizeof(lib->error)];
        ic_text_copy(version, sizeof(version), lib->version,
                     strnlen(lib->version, sizeof(version)));
        ic_text_copy(error, sizeof(error), lib->error, strnlen(lib->error, sizeof(error)));
        if (!cJSON_AddStringToObject(item, "name", lib->name) ||
            !(loaded ? cJSON_AddStringToObject(item, "version", version)
                     : cJSON_AddNullToObject(item, "version")) ||
            !cJSON_AddStringToObject(item, "status", ic_library_state_names[lib->state]) ||
            !(error[0] ? cJSON_AddStringToObject(item, "error", error)
                       : cJSON_AddNullToObject(item, "error")) ||
            !cJSON_AddStringToObject(item, "probe", lib->path) ||
            !cJSON_AddNumberToObject(item, "import_ms", lib->load_ms))
            goto fail;
        if (loaded) {
            cJSON *exports = ic_protocol_names(lib->exports);
            cJSON *imports = ic_protocol_names(lib->imports);
            cJSON *dtypes = cJSON_CreateArray();
            cJSON *layouts = cJSON_CreateArray();
            cJSON_AddItemToObject(item, "exports", exports);
            cJSON_AddItemToObject(item, "imports", imports);
            cJSON_AddItemToObject(item, "dtypes", dtypes);
            cJSON_AddItemToObject(item, "layouts", layouts);
            if (!exports || !imports || !dtypes || !layouts)
                goto fail;
            for (int d = IC_DTYPE_FIRST; d < IC_DTYPE_END; d++) {
                if (lib->dtypes & (1u << d))
                    cJSON_AddItemToArray(dtypes, cJSON_CreateString(ic_dtype_name(d)));
            }
            for (int l = 0; l < IC_LAYOUT_COUNT; l++) {
                if (lib->layouts & (1u << l))
                    cJSON_AddItemToArray(layouts, cJSON_CreateString(ic_layout_name(l)));
            }
            /* Where it builds arrays, and why not on a device it lacks (a GPU library on a
             * machine without one says so here, not as an import error). */
            cJSON *devices = cJSON_AddArrayToObject(item, "devices");
            cJSON *device_notes = cJSON_AddObjectToObject(item, "device_notes");
            if (!devices || !device_notes)
                goto fail;
            for (int k = 0; k < IC_KIND_COUNT; k++) {
                const char *kind = ic_device_kind_name((enum ic_device_kind)k);
                const char *note = ic_library_note(lib, kind);
                if (lib->devices & (1u << k))
                    cJSON_AddItemToArray(devices, cJSON_CreateString(kind));
                else if (note)
                    cJSON_AddStringToObject(device_notes, kind, note);
            }
            cJSON *calls = cJSON_AddObjectToObject(item, "calls");
            for (int p = 0; calls && p < IC_PROTOCOL_COUNT; p++) {
                const char *exp = ic_library_call(lib, false, p);
                const char *imp = ic_library_call(lib, true, p);
                if (!exp && !imp)
                    continue;
                cJSON *entry = cJSON_AddObjectToObject(calls, ic_protocol_id(p));
                if (entry && exp)
                    cJSON_AddStringToObject(entry, "export", exp);
                if (entry && imp)
                    cJSON_AddStringToObject(entry, "import", imp);
            }
        }
    }
    return libs;
fail:
    cJSON_Delete(libs);
    return NULL;
}

cJSON *ic_report_devices(const struct ic_devices *devices)
{
    cJSON *json = cJSON_CreateObject();
    for (int k = 0; json && k < IC_KIND_COUNT; k++) {
        cJSON *entry = cJSON_AddObjectToObject(json, ic_device_kind_name(k));
        bool available = devices->available & (1u << k);
        if (!entry || !cJSON_AddBoolToObject(entry, "available", available) ||
            !cJSON_AddStringToObject(entry, "detail", devices->detail[k])) {
            cJSON_Delete(json);
            return NULL;
        }
    }
    return json;
}

void ic_report_count(const struct ic_plan *plan, size_t counts[IC_OUTCOME_COUNT])
{
    memset(counts, 0, sizeof(size_t) * IC_OUTCOME_COUNT);
    for (size_t i = 0; i < plan->count; i++) {
        if (plan->items[i].done)
            counts[plan->items[i].result.outcome]++;
    }
}

static cJSON *ic_outcome_counts(const size_t counts[IC_OUTCOME_COUNT])
{
    cJSON *json = cJSON_CreateObject();
    for (int o = 0; json && o < IC_OUTCOME_COUNT; o++) {
        if (!cJSON_AddNumberToObject(json, ic_outcome_name(o), (double)counts[o])) {
            cJSON_Delete(json);
            return NULL;
        }
    }
    return json;
}

/* Summary of one protocol: a cell per (producer, consumer) that has cases, and a gap entry
 * with its reason for each pair of usable probes without any. */
static cJSON *ic_protocol_summary(const struct ic_catalog *catalog, const struct ic_plan *plan,
                                  enum ic_protocol protocol, uint32_t available)
{
    cJSON *summary = cJSON_CreateObject();
    cJSON *cells = summary ? cJSON_AddArrayToObject(summary, "cells") : NULL;
    cJSON *gaps = summary ? cJSON_AddArrayToObject(summary, "gaps") : NULL;
    size_t totals[IC_OUTCOME_COUNT] = {0};
    if (!cells || !gaps)
        goto fail;

    /* Cases of a pair are contiguous in the plan (ic_plan.h), so one pass finds the cells. */
    size_t i = 0;
    while (i < plan->count) {
        const struct ic_case *c = &plan->items[i].c;
        if (c->protocol != protocol) {
            i++;
            continue;
        }
        size_t counts[IC_OUTCOME_COUNT] = {0};
        size_t j = i;
        for (; j < plan->count; j++) {
            const struct ic_planned *item = &plan->items[j];
            if (item->c.protocol != protocol || strcmp(item->c.producer, c->producer) != 0 ||
                strcmp(item->c.consumer, c->consumer) != 0 || item->c.device.kind != c->device.kind)
                break;
            if (item->done) {
                counts[item->result.outcome]++;
                totals[item->result.outcome]++;
            }
        }
        cJSON *cell = cJSON_CreateObject();
        if (!cell || !cJSON_AddItemToArray(cells, cell) ||
            !cJSON_AddStringToObject(cell, "producer", c->producer) ||
            !cJSON_AddStringToObject(cell, "consumer", c->consumer) ||
            !cJSON_AddStringToObject(cell, "device", ic_device_kind_name(c->device.kind)) ||
            !cJSON_AddNumberToObject(cell, "total", (double)(j - i)))
            goto fail;
        cJSON *outcomes = ic_outcome_counts(counts);
        if (!outcomes)
            goto fail;
        cJSON_AddItemToObject(cell, "outcomes", outcomes);
        i = j;
    }

    char reason[1200];
    for (int k = 0; k < IC_KIND_COUNT; k++) {
        if (!(available & (1u << k)))
            continue; /* the devices object says why once */
        for (int p = 0; p < catalog->count; p++) {
            /* Not part of this run, or no library at all (an unusable probe file). */
            if (catalog->libs[p].state == IC_LIBRARY_FOUND ||
                catalog->libs[p].state == IC_LIBRARY_INVALID)
                continue;
            for (int c = 0; c <= catalog->count; c++) {
                const char *consumer =
                    c < catalog->count ? catalog->libs[c].name : IC_REFERENCE_CONSUMER;
                if (c < catalog->count && (catalog->libs[c].state == IC_LIBRARY_FOUND ||
                                           catalog->libs[c].state == IC_LIBRARY_INVALID))
                    continue;
                const char *why =
                    ic_plan_pair_gap(catalog, protocol, (enum ic_device_kind)k,
                                     catalog->libs[p].name, consumer, reason, sizeof(reason));
                if (!why)
                    continue;
                cJSON *gap = cJSON_CreateObject();
                if (!gap || !cJSON_AddItemToArray(gaps, gap) ||
                    !cJSON_AddStringToObject(gap, "producer", catalog->libs[p].name) ||
                    !cJSON_AddStringToObject(gap, "consumer", consumer) ||
                    !cJSON_AddStringToObject(gap, "device", ic_device_kind_name(k)) ||
                    !cJSON_AddStringToObject(gap, "reason", why))
                    goto fail;
            }
        }
    }
    cJSON *outcomes = ic_outcome_counts(totals);
    if (!outcomes)
        goto fail;
    cJSON_AddItemToObject(summary, "outcomes", outcomes);
    return summary;
fail:
    cJSON_Delete(summary);
    return NULL;
}

static cJSON *ic_platform(void)
{
    struct utsname names;
    cJSON *json = cJSON_CreateObject();
    if (!json)
        return NULL;
    if (uname(&names) == 0) {
        cJSON_AddStringToObject(json, "system", names.sysname);
        cJSON_AddStringToObject(json, "release", names.release);
        cJSON_AddStringToObject(json, "machine", names.machine);
    }
    char host[256];
    if (gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = '\0';
        cJSON_AddStringToObject(json, "host", host);
    }
    return json;
}

cJSON *ic_report_skeleton(const cJSON *tool, const cJSON *run, const cJSON *python,
                          const struct ic_catalog *catalog, const struct ic_plan *plan,
                          const struct ic_devices *devices)
{
    cJSON *report = cJSON_CreateObject();
    cJSON *environment, *summary, *protocols;
    size_t counts[IC_OUTCOME_COUNT];
    if (!report)
        return NULL;
    if (!cJSON_AddStringToObject(report, "schema", "interopcheck-report") ||
        !cJSON_AddNumberToObject(report, "schema_version", IC_REPORT_SCHEMA_VERSION))
        goto fail;
    cJSON_AddItemToObject(report, "tool", cJSON_Duplicate(tool, true));
    cJSON_AddItemToObject(report, "run", cJSON_Duplicate(run, true));
    environment = cJSON_AddObjectToObject(report, "environment");
    if (!environment)
        goto fail;
    cJSON_AddItemToObject(environment, "platform", ic_platform());
    cJSON_AddItemToObject(environment, "python", cJSON_Duplicate(python, true));
    cJSON_AddItemToObject(environment, "libraries", ic_report_libraries(catalog));
    cJSON_AddItemToObject(environment, "devices", ic_report_devices(devices));

    /* The place of the cases, which are written from a case source (ic_report_write_atomic)
     * or a line each into a stream. */
    if (!cJSON_AddArrayToObject(report, "cases"))
        goto fail;

    summary = cJSON_AddObjectToObject(report, "summary");
    if (!summary)
        goto fail;
    ic_report_count(plan, counts);
    size_t total = 0;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++)
        total += counts[o];
    cJSON_AddNumberToObject(summary, "total", (double)total);
    cJSON_AddItemToObject(summary, "outcomes", ic_outcome_counts(counts));
    protocols = cJSON_AddObjectToObject(summary, "protocols");
    if (!protocols)
        goto fail;
    for (int p = 0; p < IC_PROTOCOL_COUNT; p++) {
        cJSON *item = ic_protocol_summary(catalog, plan, (enum ic_protocol)p, devices->available);
        if (!item)
            goto fail;
        cJSON_AddItemToObject(protocols, ic_protocol_id(p), item);
    }
    return report;
fail:
    cJSON_Delete(report);
    return NULL;
}

/* Writes `item` as JSON text (formatted or on one line) and a separator. */
static int ic_json_put(FILE *file, const cJSON *item, bool formatted, const char *after)
{
    size_t len;
    const char *text = ic_json_print(item, formatted, &len);
    if (!text)
        return IC_ENOMEM;
    return fwrite(text, 1, len, file) != len || fputs(after, file) < 0 ? IC_EIO : 0;
}

/* What ic_json_stream writes: `json`, and with `cases` the elements of its "cases" member
 * taken from that source instead of from the member, each shown to `observer` (if any). */
struct ic_report_text {
    const cJSON *json;
    struct ic_cases *cases;
    const struct ic_report_observer *observer; /* NULL: none */
};

/* The elements of an array member, each on a line and each but the last followed by a comma,
 * from the array or from the case source. */
static int ic_json_put_elements(FILE *file, const cJSON *array, const struct ic_report_text *text)
{
    struct ic_cases *cases = text ? text->cases : NULL;
    const cJSON *e = cases ? ic_cases_first(cases) : array->child;
    int rc = fputs(e ? "[\n" : "[]", file) < 0 ? IC_EIO : 0;
    size_t written = 0;
    while (e && rc == 0) {
        size_t len = 0;
        const char *line = cases ? ic_cases_text(cases, &len) : NULL;
        if (line)
            rc = fwrite(line, 1, len, file) == len ? 0 : IC_EIO;
        else
            rc = ic_json_put(file, e, false, "");
        if (rc == 0 && cases && text->observer && text->observer->on_case)
            text->observer->on_case(text->observer->context, e);
        /* About every 10 MB (--all writes 117 MB), so the final fsync has little left. */
        if (rc == 0 && ++written % 16384 == 0)
            ic_text_write_early(file);
        const cJSON *next = NULL;
        if (rc == 0)
            next = cases ? ic_cases_next(cases) : e->next;
        if (rc == 0 && fputs(next ? ",\n" : "\n]", file) < 0)
            rc = IC_EIO;
        e = next;
    }
    if (rc == 0 && cases)
        rc = ic_cases_status(cases);
    return rc;
}

/* An object a member at a time, and an array member an element at a time, each on a line of
 * its own: a report's text is never whole in memory (tens of megabytes for --all, as much
 * again while cJSON grows its buffer), and a case is one line to grep. */
static int ic_json_stream(FILE *file, void *context)
{
    const struct ic_report_text *text = context;
    const cJSON *json = text->json;
    if (!cJSON_IsObject(json))
        return ic_json_put(file, json, true, "\n");
    if (fputs("{\n", file) < 0)
        return IC_EIO;
    for (const cJSON *item = json->child; item; item = item->next) {
        bool cases = text->cases && item->string && strcmp(item->string, "cases") == 0;
        cJSON *key = cJSON_CreateStringReference(item->string ? item->string : "");
        int rc = key ? ic_json_put(file, key, false, ": ") : IC_ENOMEM;
        cJSON_Delete(key);
        if (rc == 0 && (cases || (cJSON_IsArray(item) && item->child)))
            rc = ic_json_put_elements(file, item, cases ? text : NULL);
        else if (rc == 0)
            rc = ic_json_put(file, item, true, "");
        /* Members the hook adds go at the end of the object: this loop reaches them. */
        if (rc == 0 && cases && text->observer && text->observer->after_cases)
            rc = text->observer->after_cases(text->observer->context);
        if (rc == 0 && fputs(item->next ? ",\n" : "\n", file) < 0)
            rc = IC_EIO;
        if (rc < 0)
            return rc;
    }
    return fputs("}\n", file) < 0 ? IC_EIO : 0;
}

int ic_json_write_atomic(const char *path, const cJSON *json, char *err, size_t err_size)
{
    struct ic_report_text text = {json, NULL, NULL};
    return ic_text_write_atomic_with(path, ic_json_stream, &text, err, err_size);
}

int ic_report_write_atomic(const char *path, const cJSON *report, struct ic_cases *cases, char *err,
                           size_t err_size)
{
    return ic_report_write_atomic_observed(path, report, cases, NULL, err, err_size);
}

int ic_report_write_atomic_observed(const char *path, const cJSON *report, struct ic_cases *cases,
                                    const struct ic_report_observer *observer, char *err,
                                    size_t err_size)
{
    struct ic_report_text text = {report, cases, observer};
    if (!cJSON_IsObject(report)) {
        snprintf(err, err_size, "no report to write to %s", path);
        return IC_EINVAL;
    }
    int rc = ic_text_write_atomic_with(path, ic_json_stream, &text, err, err_size);
    if (rc < 0 && ic_cases_status(cases) < 0)
        snprintf(err, err_size, "cannot write %s: the cases could not be read back: %s", path,
                 ic_strerror(ic_cases_status(cases)));
    return rc;
}

/* The shortest decimal form of `value` that reads back as the same double, so that 2.0000001
 * is not shown as "2" in a message that says it is not an integer. */
static void ic_format_number(char *buf, size_t size, double value)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, value);
        if (strtod(buf, NULL) == value)
            return;
    }
}

/* The schema version must be the integer this build reads. cJSON keeps every number as a
 * double, so "1.5" and 1e300 are told apart here rather than by valueint, which truncates and
 * saturates. A number written with a zero fraction (2.0) has the value 2: JSON numbers are
 * values, and the report's JSON Schema ("const": 2) accepts it too. */
static int ic_report_check_version(const cJSON *version, const char *path, char *err,
                                   size_t err_size)
{
    char shown[64];
    if (!version) {
        snprintf(err, err_size,
                 "%s has no \"schema_version\"; this interopcheck reads report "
                 "schema version %d",
                 path, IC_REPORT_SCHEMA_VERSION);
        return IC_EINVAL;
    }
    if (!cJSON_IsNumber(version)) {
        const char *what = cJSON_IsString(version)  ? "a string"
                           : cJSON_IsBool(version)  ? "a boolean"
                           : cJSON_IsNull(version)  ? "null"
                           : cJSON_IsArray(version) ? "an array"
                                                    : "an object";
        snprintf(err, err_size,
                 "%s: \"schema_version\" is %s, not a number; this interopcheck "
                 "reads report schema version %d",
                 path, what, IC_REPORT_SCHEMA_VERSION);
        return IC_EINVAL;
    }
    double value = version->valuedouble;
    ic_format_number(shown, sizeof(shown), value);
    /* Every double at or beyond 2^53 is an integer; below, the round trip through long long
     * tells (and needs no libm, which the build does not link). */
    bool integral = isfinite(value) &&
                    (value >= 0x1p53 || value <= -0x1p53 || value == (double)(long long)value);
    if (!integral) {
        snprintf(err, err_size,
                 "%s: \"schema_version\" is %s, not an integer; this interopcheck "
                 "reads report schema version %d",
                 path, shown, IC_REPORT_SCHEMA_VERSION);
        return IC_EINVAL;
    }
    if (value != IC_REPORT_SCHEMA_VERSION) {
        snprintf(err, err_size,
                 "%s has report schema version %s; this interopcheck reads "
                 "version %d",
                 path, shown, IC_REPORT_SCHEMA_VERSION);
        return IC_EINVAL;
    }
    return 0;
}

/* A reproducer longer than a report keeps is dropped with the reason, never cut: a cut script
 * would not run. */
static int ic_report_drop_long_scripts(cJSON *report)
{
    cJSON *finding;
    cJSON_ArrayForEach(finding, ic_json_get(report, "findings"))
    {
        const char *script = ic_json_string(finding, "reproducer");
        size_t len = script ? strlen(script) : 0;
        if (len <= IC_TEXT_SCRIPT_CAP)
            continue;
        char why[160];
        snprintf(why, sizeof(why),
                 "the reproducer in the file is %zu bytes, more than the %d a report keeps", len,
                 IC_TEXT_SCRIPT_CAP);
        cJSON_DeleteItemFromObjectCaseSensitive(finding, "reproducer");
        cJSON_DeleteItemFromObjectCaseSensitive(finding, "reproducer_error");
        if (!cJSON_AddStringToObject(finding, "reproducer_error", why))
            return IC_ENOMEM;
    }
    return 0;
}

int ic_report_hold_text(cJSON *report)
{
    /* A report file may come from anywhere: its text is held to what a run would have
     * written (valid UTF-8, each string capped) before any view, diff or merge sees it. */
    if (ic_report_drop_long_scripts(report) < 0 ||
        ic_json_cap_strings(report, IC_TEXT_FIELD_CAP, "reproducer", IC_TEXT_SCRIPT_CAP) < 0)
        return IC_ENOMEM;
    return 0;
}

/* The whole of `file` as a NUL-terminated string of *ret_size bytes (a new allocation). */
static int ic_report_read_text(FILE *file, const char *path, char **ret, size_t *ret_size,
                               char *err, size_t err_size)
{
    /* Read to the end, growing the buffer: a gunzipped report has no size to ask for. */
    size_t size = 0, capacity = 1 << 16;
    char *text = malloc(capacity);
    for (;;) {
        if (!text) {
            snprintf(err, err_size, "cannot read %s: out of memory", path);
            return IC_ENOMEM;
        }
        size += fread(text + size, 1, capacity - 1 - size, file);
        if (size < capacity - 1)
            break;
        char *grown = capacity > SIZE_MAX / 2 ? NULL : realloc(text, capacity * 2);
        if (!grown)
            free(text);
        text = grown;
        capacity *= 2;
    }
    if (ferror(file)) {
        snprintf(err, err_size, "cannot read %s: %s", path,
                 errno ? strerror(errno) : "not gzip data that zlib can read");
        free(text);
        return IC_EIO;
    }
    text[size] = '\0';
    *ret = text;
    *ret_size = size;
    return 0;
}

/* The JSON value that is the whole of `text`; where it is not, the error says the line and
 * column. */
static int ic_report_parse(const char *text, size_t size, const char *path, cJSON **ret,
                           char *err, size_t err_size)
{
    size_t line, column;
    /* JSON text has no NUL; one would also end the text early for the parser below. */
    const char *nul = memchr(text, '\0', size);
    if (nul) {
        ic_text_line_column(text, size, (size_t)(nul - text), &line, &column);
        snprintf(err, err_size, "%s is not JSON text: a NUL byte at line %zu, column %zu", path,
                 line, column);
        return IC_EINVAL;
    }
    /* The length counts the terminating NUL, which is how cJSON's "nothing may follow the
     * value" check wants it: trailing garbage is an error, not ignored. */
    const char *stop = NULL;
    *ret = cJSON_ParseWithLengthOpts(text, size + 1, &stop, true);
    if (!*ret) {
        size_t offset = stop && stop >= text ? (size_t)(stop - text) : 0;
        ic_text_line_column(text, size, offset, &line, &column);
        snprintf(err, err_size, "%s is not JSON: a syntax error at line %zu, column %zu%s", path,
                 line, column, offset >= size ? " (the end of the file)" : "");
        return IC_EINVAL;
    }
    return 0;
}

/* The members every reader relies on: the schema's name and version, cases and summary. */
static int ic_report_check_frame(const cJSON *json, const char *path, char *err, size_t err_size)
{
    const cJSON *schema = ic_json_get(json, "schema");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "interopcheck-report") != 0) {
        snprintf(err, err_size,
                 "%s is not an interopcheck report (no \"schema\": "
                 "\"interopcheck-report\")",
                 path);
        return IC_EINVAL;
    }
    if (ic_report_check_version(ic_json_get(json, "schema_version"), path, err, err_size) < 0)
        return IC_EINVAL;
    if (!cJSON_IsArray(ic_json_get(json, "cases")) ||
        !cJSON_IsObject(ic_json_get(json, "summary"))) {
        snprintf(err, err_size, "%s lacks its cases or summary", path);
        return IC_EINVAL;
    }
    return 0;
}

FILE *ic_report_open(const char *path, const char *mode, const char *what, char *err,
                     size_t err_size)
{
    (void)mode; /* always read, close-on-exec: and gzip or not, whatever the name says */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FILE *file = fd >= 0 ? ic_gz_fdopen(fd, false) : NULL;
    if (!file && fd >= 0) {
        close(fd);
        errno = ENOMEM;
    }
    if (!file)
        snprintf(err, err_size, "cannot read %s%s: %s", what, path, strerror(errno));
    return file;
}

int ic_report_load(const char *path, cJSON **ret, char *err, size_t err_size)
{
    FILE *file = ic_report_open(path, "rb", "", err, err_size);
    if (!file)
        return IC_EIO;
    char *text = NULL;
    size_t size = 0;
    cJSON *json = NULL;
    int rc = ic_report_read_text(file, path, &text, &size, err, err_size);
    fclose(file);
    if (rc == 0)
        rc = ic_report_parse(text, size, path, &json, err, err_size);
    free(text);
    if (rc == 0)
        rc = ic_report_check_frame(json, path, err, err_size);
    if (rc == 0 && ic_report_hold_text(json) < 0) {
        snprintf(err, err_size, "cannot read %s: out of memory", path);
        rc = IC_ENOMEM;
    }
    if (rc < 0) {
        cJSON_Delete(json);
        return rc;
    }
    *ret = json;
    return 0;
}

static int ic_outcome_of(const cJSON *c)
{
    const cJSON *outcome = ic_json_get(c, "outcome");
    enum ic_outcome value;
    if (!cJSON_IsString(outcome) || ic_outcome_from_name(outcome->valuestring, &value) < 0)
        return -1;
    return (int)value;
}

static void ic_set_counts(cJSON *outcomes, const size_t counts[IC_OUTCOME_COUNT])
{
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        cJSON *item = ic_json_get(outcomes, ic_outcome_name(o));
        if (item)
            cJSON_SetNumberValue(item, (double)counts[o]);
    }
}

/* A summary cell while recounting: the key of the cases it counts and its new counts. */
struct ic_recount_cell {
    char *key; /* "protocol\x1fproducer\x1fconsumer\x1fdevice\x1fenvironment" */
    cJSON *cell;
    size_t protocol; /* index into the summary's protocols */
    size_t counts[IC_OUTCOME_COUNT];
};

static char *ic_recount_key(const char *protocol, const char *producer, const char *consumer,
                            const char *device, const char *environment)
{
    size_t size = strlen(protocol) + strlen(producer) + strlen(consumer) + strlen(device) +
                  strlen(environment) + 5;
    char *key = malloc(size);
    if (key)
        snprintf(key, size, "%s\x1f%s\x1f%s\x1f%s\x1f%s", protocol, producer, consumer, device,
                 environment);
    return key;
}

static int ic_recount_compare(const void *a, const void *b)
{
    return strcmp(((const struct ic_recount_cell *)a)->key,
                  ((const struct ic_recount_cell *)b)->key);
}

static struct ic_recount_cell *ic_recount_find(struct ic_recount_cell *cells, size_t ncells,
                                               const cJSON *c, const char *environment)
{
    const char *protocol = ic_json_string(c, "protocol"), *producer = ic_json_string(c, "producer");
    const char *consumer = ic_json_string(c, "consumer"), *device = ic_json_string(c, "device");
    if (!protocol || !producer || !consumer || !device)
        return NULL;
    struct ic_recount_cell probe = {
        .key = ic_recount_key(protocol, producer, consumer, device, environment)};
    if (!probe.key)
        return NULL;
    struct ic_recount_cell *found =
        ncells ? bsearch(&probe, cells, ncells, sizeof(*cells), ic_recount_compare) : NULL;
    free(probe.key);
    return found;
}

/* One pass over the cases: the cells are sorted by key and each case finds its cell by binary
 * search, so a report of 60,000 cases and 1,500 cells recounts in milliseconds. A cell without
 * an environment (a report of one run) counts the cases of any environment. */
int ic_report_recount(cJSON *report)
{
    cJSON *cases = ic_json_get(report, "cases");
    if (!cJSON_IsArray(cases))
        return IC_EINVAL;
    struct ic_cases_array source;
    ic_cases_of_array(&source, cases);
    return ic_report_recount_from(report, &source.base);
}

int ic_report_recount_from(cJSON *report, struct ic_cases *cases)
{
    cJSON *summary = ic_json_get(report, "summary");
    cJSON *protocols = ic_json_get(summary, "protocols");
    size_t totals[IC_OUTCOME_COUNT] = {0};
    struct ic_recount_cell *cells = NULL;
    size_t ncells = 0, capacity = 0, nprotocols = 0;
    size_t(*per_protocol)[IC_OUTCOME_COUNT] = NULL;
    const cJSON *c;
    cJSON *protocol, *cell;
    int rc = IC_ENOMEM;

    if (!cJSON_IsObject(summary))
        return IC_EINVAL;
    cJSON_ArrayForEach(protocol, protocols)
    {
        cJSON_ArrayForEach(cell, ic_json_get(protocol, "cells"))
        {
            const char *producer = ic_json_string(cell, "producer");
            const char *consumer = ic_json_string(cell, "consumer");
            const char *device = ic_json_string(cell, "device");
            if (!producer || !consumer || !device || !protocol->string)
                continue;
            if (ncells == capacity) {
                size_t grown = capacity ? 2 * capacity : 256;
                struct ic_recount_cell *more = realloc(cells, grown * sizeof(*cells));
                if (!more)
                    goto done;
                cells = more;
                capacity = grown;
            }
            struct ic_recount_cell *slot = &cells[ncells];
            memset(slot, 0, sizeof(*slot));
            slot->key = ic_recount_key(protocol->string, producer, consumer, device,
                                       ic_json_string_or(cell, "environment", ""));
            if (!slot->key)
                goto done;
            slot->cell = cell;
            slot->protocol = nprotocols;
            ncells++;
        }
        nprotocols++;
    }
    per_protocol = calloc(nprotocols ? nprotocols : 1, sizeof(*per_protocol));
    if (!per_protocol)
        goto done;
    if (ncells) /* cells is NULL then: qsort and bsearch want an array (fuzz_report) */
        qsort(cells, ncells, sizeof(*cells), ic_recount_compare);

    ic_cases_for_each(c, cases)
    {
        int o = ic_outcome_of(c);
        if (o < 0)
            continue;
        totals[o]++;
        const char *environment = ic_json_string(c, "environment");
        struct ic_recount_cell *found =
            environment ? ic_recount_find(cells, ncells, c, environment) : NULL;
        if (!found)
            found = ic_recount_find(cells, ncells, c, "");
        if (found) {
            found->counts[o]++;
            per_protocol[found->protocol][o]++;
        }
    }
    rc = ic_cases_status(cases);
    if (rc < 0)
        goto done;
    ic_set_counts(ic_json_get(summary, "outcomes"), totals);
    for (size_t i = 0; i < ncells; i++)
        ic_set_counts(ic_json_get(cells[i].cell, "outcomes"), cells[i].counts);
    size_t index = 0;
    cJSON_ArrayForEach(protocol, protocols)
    {
        ic_set_counts(ic_json_get(protocol, "outcomes"), per_protocol[index]);
        index++;
    }
    rc = 0;
done:
    for (size_t i = 0; i < ncells; i++)
        free(cells[i].key);
    free(cells);
    free(per_protocol);
    return rc;
}
