#include "ic_report_html.h"

#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ic_catalog.h"
#include "ic_dtype.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_layout.h"
#include "ic_protocol.h"
#include "ic_result.h"
#include "ic_text.h"

/*
 * The page is three parts: a fixed head (style sheet), the report's data as JSON in a
 * <script type="application/json"> element, and a fixed script that builds the page from that
 * data. Only the data part holds text that came from libraries, and it is written by one
 * function, ic_html_put_string, which escapes every character that could end the element or
 * confuse a JavaScript or HTML parser. The script then only ever puts that text into the page
 * with textContent. A Content-Security-Policy with a per-file nonce stands behind both: even a
 * script element smuggled into the page would not run, and nothing may be fetched.
 *
 * The data is shaped for size and for filtering, not as a copy of the report (the full CPU
 * matrix, 59,000 cases, is 45 MB of JSON and a 3 MB page):
 * - Names (protocols, libraries, dtypes, ...) and text (rules, diagnostics, notes, reasons)
 *   are index tables; a case holds indices. Diagnostics repeat a lot across a matrix.
 * - Cases are columns (one array per field), so the page filters with tight loops over
 *   integers. A case's (protocol, producer, consumer, device, environment) is one index into
 *   the table of cells, which also holds the gaps (cells without cases) and their reasons.
 * - A check that passed without a note is one bit of a mask; only the others are spelled out.
 *   Case ids are rebuilt by the page from their parts, and only an id that differs from its
 *   parts is stored.
 */

/* --- Interned strings ------------------------------------------------------------------------ */

/* A table of distinct strings in first-seen order, each with its index. Failures are sticky
 * (status), so the writer can intern freely and check once at the end. */
struct ic_strtab {
    char **items;
    size_t count, capacity;
    size_t *slots; /* open addressing: index + 1, 0 for an empty slot */
    size_t nslots;
    int status;
};

static uint64_t ic_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void ic_strtab_release(struct ic_strtab *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->items[i]);
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static int ic_strtab_grow(struct ic_strtab *t)
{
    size_t nslots = t->nslots ? t->nslots * 2 : 64;
    size_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return IC_ENOMEM;
    for (size_t i = 0; i < t->count; i++) {
        size_t at = (size_t)ic_hash(t->items[i]) & (nslots - 1);
        while (slots[at])
            at = (at + 1) & (nslots - 1);
        slots[at] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

/* The index of `s` in the table, added when new. 0 when memory runs out (status says so). */
static size_t ic_strtab_intern(struct ic_strtab *t, const char *s)
{
    if (t->status)
        return 0;
    if ((t->count + 1) * 2 > t->nslots && ic_strtab_grow(t) < 0)
        goto nomem;
    size_t at = (size_t)ic_hash(s) & (t->nslots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->nslots - 1)) {
        if (strcmp(t->items[t->slots[at] - 1], s) == 0)
            return t->slots[at] - 1;
    }
    if (t->count == t->capacity) {
        size_t capacity = t->capacity ? t->capacity * 2 : 32;
        char **items = realloc(t->items, capacity * sizeof(*items));
        if (!items)
            goto nomem;
        t->items = items;
        t->capacity = capacity;
    }
    char *copy = strdup(s);
    if (!copy)
        goto nomem;
    t->items[t->count] = copy;
    t->slots[at] = ++t->count;
    return t->count - 1;
nomem:
    t->status = IC_ENOMEM;
    return 0;
}

/* --- Safe JSON output ------------------------------------------------------------------------ */

/*
 * Writes `s` as a JSON string that is safe inside <script type="application/json">: "<", ">"
 * and "&" are \u escapes (so neither "</script" nor "<!--" can appear), as are control
 * characters and U+2028/U+2029 (line terminators to older JavaScript parsers). Text that is
 * not valid UTF-8 is repaired first (ic_text: U+FFFD for what is ill-formed), so the page is
 * valid UTF-8 whatever a library printed, and text longer than `cap` bytes is cut with
 * ic_text's marker, so one library message cannot make the page megabytes long (a control
 * character is six bytes here).
 */
static void ic_html_put_string(FILE *out, const char *s, size_t cap)
{
    struct ic_text_buf repaired;
    bool lossy = false; /* no memory to repair: every non-ASCII byte becomes U+FFFD */
    if (!s)
        s = "";
    size_t len = strlen(s);

    ic_text_buf_init(&repaired);
    if (len > cap || !ic_utf8_valid(s, len)) {
        if (ic_text_buf_add_escaped(&repaired, s, len, IC_ESCAPE_PLAIN, cap) == 0) {
            s = ic_text_buf_str(&repaired);
            len = repaired.len;
        } else {
            lossy = true;
        }
    }
    const unsigned char *p = (const unsigned char *)s;
    /* Without memory for the cut copy, the cap still holds: the text stops short, unmarked. */
    const unsigned char *end = p + (lossy && len > cap ? cap : len);
    putc('"', out);
    for (; p < end; p++) {
        unsigned char c = *p;
        if (c >= 0x80) {
            if (lossy) {
                fputs("\\ufffd", out);
            } else if (c == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
                fprintf(out, "\\u%04x", p[2] == 0xa8 ? 0x2028u : 0x2029u);
                p += 2;
            } else {
                putc(c, out); /* valid UTF-8: the bytes of a character go out as they are */
            }
            continue;
        }
        switch (c) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '<':
        case '>':
        case '&':
            fprintf(out, "\\u%04x", c);
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\u%04x", c);
            else
                putc(c, out);
        }
    }
    putc('"', out);
    ic_text_buf_release(&repaired);
}

/* A number as JSON: integers without a fraction, others with enough digits; JSON has no NaN
 * or infinity, so those are null. */
static void ic_html_put_number(FILE *out, double value)
{
    if (!isfinite(value))
        fputs("null", out);
    else if (value > -1e15 && value < 1e15 && value == (double)(long long)value)
        fprintf(out, "%.0f", value);
    else
        fprintf(out, "%.15g", value);
}

/* Copies a part of the report's header (tool, run, environment) as JSON. "calls" (the Python
 * call behind each protocol of a library) is left out: the page does not show it. Strings are
 * capped at IC_TEXT_FIELD_CAP bytes, but a reproducer, a script, at IC_TEXT_SCRIPT_CAP: the
 * page offers it to paste. */
static void ic_html_put_value(FILE *out, const cJSON *item, size_t cap)
{
    const cJSON *child;
    bool first = true;
    if (cJSON_IsObject(item)) {
        putc('{', out);
        cJSON_ArrayForEach(child, item)
        {
            if (!child->string || strcmp(child->string, "calls") == 0)
                continue;
            if (!first)
                putc(',', out);
            first = false;
            ic_html_put_string(out, child->string, IC_TEXT_FIELD_CAP);
            putc(':', out);
            ic_html_put_value(out, child,
                              strcmp(child->string, "reproducer") == 0 ? IC_TEXT_SCRIPT_CAP
                                                                       : IC_TEXT_FIELD_CAP);
        }
        putc('}', out);
    } else if (cJSON_IsArray(item)) {
        putc('[', out);
        cJSON_ArrayForEach(child, item)
        {
            if (!first)
                putc(',', out);
            first = false;
            ic_html_put_value(out, child, IC_TEXT_FIELD_CAP);
        }
        putc(']', out);
    } else if (cJSON_IsString(item)) {
        ic_html_put_string(out, item->valuestring, cap);
    } else if (cJSON_IsNumber(item)) {
        ic_html_put_number(out, item->valuedouble);
    } else if (cJSON_IsBool(item)) {
        fputs(cJSON_IsTrue(item) ? "true" : "false", out);
    } else {
        fputs("null", out);
    }
}

/* --- The page's data ------------------------------------------------------------------------- */

/* One matrix cell: a (protocol, producer, consumer, device, environment), each an index into
 * its table, and for a gap the index of its reason in the text table (0 for a cell with
 * cases). */
struct ic_html_cell {
    size_t protocol, producer, consumer, device, environment, gap_reason;
};

struct ic_html_data {
    struct ic_strtab protocols, devices, libraries, environments, dtypes, layouts, variants,
        outcomes, checks, statuses;
    struct ic_strtab text;      /* free text: rules, diagnostics, requests, exports, notes */
    struct ic_strtab cell_keys; /* "protocol,producer,consumer,device,environment" indices */
    struct ic_html_cell *cells; /* parallel to cell_keys */
    size_t cells_capacity;
    int status;
};

/* The name tables, each written into the page's data under its own name. */
#define IC_HTML_TABLES(X)                                                                          \
    X(protocols)                                                                                   \
    X(devices)                                                                                     \
    X(libraries)                                                                                   \
    X(environments)                                                                                \
    X(dtypes)                                                                                      \
    X(layouts)                                                                                     \
    X(variants)                                                                                    \
    X(outcomes)                                                                                    \
    X(checks)                                                                                      \
    X(statuses)

static size_t ic_intern_field(struct ic_strtab *t, const cJSON *object, const char *key)
{
    const char *value = ic_json_string(object, key);
    return ic_strtab_intern(t, value ? value : "");
}

/* Adds the libraries of an environment object in their listed order, so that matrix rows and
 * columns follow the report's order of libraries (the reference consumer comes after them). */
static void ic_html_seed_libraries(struct ic_html_data *d, const cJSON *environment)
{
    const cJSON *library;
    cJSON_ArrayForEach(library, cJSON_GetObjectItemCaseSensitive(environment, "libraries"))
    {
        const char *name = ic_json_string(library, "name");
        if (name)
            ic_strtab_intern(&d->libraries, name);
    }
}

/* Fills the name tables in their canonical order (the order of the filters and matrices);
 * names a report holds beyond these are added as they are met. Index 0 of environments,
 * variants and text is "": no environment (a report that is not merged), no variant, no text. */
static void ic_html_seed(struct ic_html_data *d, const cJSON *report)
{
    for (int i = 0; i < IC_PROTOCOL_COUNT; i++)
        ic_strtab_intern(&d->protocols, ic_protocol_id((enum ic_protocol)i));
    for (int i = 0; i < IC_KIND_COUNT; i++)
        ic_strtab_intern(&d->devices, ic_device_kind_name((enum ic_device_kind)i));
    for (int i = IC_DTYPE_FIRST; i < IC_DTYPE_END; i++)
        ic_strtab_intern(&d->dtypes, ic_dtype_name((enum ic_dtype)i));
    for (int i = 0; i < IC_LAYOUT_COUNT; i++)
        ic_strtab_intern(&d->layouts, ic_layout_name((enum ic_layout)i));
    for (int i = 0; i < IC_OUTCOME_COUNT; i++)
        ic_strtab_intern(&d->outcomes, ic_outcome_name((enum ic_outcome)i));
    for (int i = 0; i < IC_CHECK_COUNT; i++)
        ic_strtab_intern(&d->checks, ic_check_name((enum ic_check)i));
    ic_strtab_intern(&d->statuses, "pass");
    ic_strtab_intern(&d->statuses, "fail");
    ic_strtab_intern(&d->statuses, "skip");
    ic_strtab_intern(&d->environments, "");
    ic_strtab_intern(&d->variants, "");
    ic_strtab_intern(&d->text, "");

    const cJSON *environments = cJSON_GetObjectItemCaseSensitive(report, "environments");
    const cJSON *entry;
    cJSON_ArrayForEach(entry, environments)
    {
        ic_intern_field(&d->environments, entry, "id");
        ic_html_seed_libraries(d, cJSON_GetObjectItemCaseSensitive(entry, "environment"));
    }
    ic_html_seed_libraries(d, cJSON_GetObjectItemCaseSensitive(report, "environment"));
}

/* The cell of a case or a gap (an object with producer, consumer, device and, merged,
 * environment) of `protocol`: its index in the cell table, added when new. */
static size_t ic_html_cell_of(struct ic_html_data *d, const char *protocol, const cJSON *object)
{
    struct ic_html_cell cell = {
        .protocol = ic_strtab_intern(&d->protocols, protocol ? protocol : ""),
        .producer = ic_intern_field(&d->libraries, object, "producer"),
        .consumer = ic_intern_field(&d->libraries, object, "consumer"),
        .device = ic_intern_field(&d->devices, object, "device"),
        .environment = ic_intern_field(&d->environments, object, "environment"),
    };
    char key[128];
    snprintf(key, sizeof(key), "%zu,%zu,%zu,%zu,%zu", cell.protocol, cell.producer, cell.consumer,
             cell.device, cell.environment);
    size_t before = d->cell_keys.count;
    size_t index = ic_strtab_intern(&d->cell_keys, key);
    if (d->cell_keys.status || d->cell_keys.count == before)
        return index;
    if (index >= d->cells_capacity) {
        size_t capacity = d->cells_capacity ? d->cells_capacity * 2 : 256;
        struct ic_html_cell *cells = realloc(d->cells, capacity * sizeof(*cells));
        if (!cells) {
            d->status = IC_ENOMEM;
            return 0;
        }
        d->cells = cells;
        d->cells_capacity = capacity;
    }
    d->cells[index] = cell;
    return index;
}

/* --- Case columns ---------------------------------------------------------------------------- */

/* Each column writes one value per case. */
typedef void (*ic_html_column_fn)(struct ic_html_data *d, const cJSON *c, FILE *out);

static void ic_column_cell(struct ic_html_data *d, const cJSON *c, FILE *out)
{
    fprintf(out, "%zu", ic_html_cell_of(d, ic_json_string(c, "protocol"), c));
}

#define IC_NAME_COLUMN(field, table)                                                               \
    static void ic_column_##field(struct ic_html_data *d, const cJSON *c, FILE *out)               \
    {                                                                                              \
        fprintf(out, "%zu", ic_intern_field(&d->table, c, #field));                                \
    }
IC_NAME_COLUMN(dtype, dtypes)
IC_NAME_COLUMN(layout, layouts)
IC_NAME_COLUMN(variant, variants)
IC_NAME_COLUMN(outcome, outcomes)
IC_NAME_COLUMN(rule, text)
IC_NAME_COLUMN(diagnostic, text)
IC_NAME_COLUMN(request, text)
IC_NAME_COLUMN(exported, text)
#undef IC_NAME_COLUMN

/* Durations to a tenth of a millisecond: finer digits cost bytes and say nothing. */
static void ic_column_ms(struct ic_html_data *d, const cJSON *c, FILE *out)
{
    (void)d;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(c, "duration_ms");
    double value = 0;
    if (cJSON_IsNumber(ms) && ms->valuedouble > 0 && ms->valuedouble < 1e12)
        value = (double)(long long)(ms->valuedouble * 10 + 0.5) / 10;
    fprintf(out, "%.10g", value);
}

/* The checks of a case: the mask of checks that passed without a note (bit i: check i of the
 * checks table), alone when that is all; otherwise an array of the mask followed by (check,
 * status, rule, note) index quadruples for the others. */
static void ic_column_checks(struct ic_html_data *d, const cJSON *c, FILE *out)
{
    const cJSON *check;
    unsigned long mask = 0;
    bool listed = false;
    cJSON_ArrayForEach(check, cJSON_GetObjectItemCaseSensitive(c, "checks"))
    {
        size_t name = ic_strtab_intern(&d->checks, check->string ? check->string : "");
        const char *status = ic_json_string(check, "status");
        bool plain = status && strcmp(status, "pass") == 0 && !ic_json_string(check, "note") &&
                     !ic_json_string(check, "rule");
        if (plain && name < 31)
            mask |= 1ul << name;
        else
            listed = true;
    }
    if (!listed) {
        fprintf(out, "%lu", mask);
        return;
    }
    fprintf(out, "[%lu", mask);
    cJSON_ArrayForEach(check, cJSON_GetObjectItemCaseSensitive(c, "checks"))
    {
        size_t name = ic_strtab_intern(&d->checks, check->string ? check->string : "");
        if (name < 31 && (mask & (1ul << name)))
            continue;
        fprintf(out, ",%zu,%zu,%zu,%zu", name, ic_intern_field(&d->statuses, check, "status"),
                ic_intern_field(&d->text, check, "rule"), ic_intern_field(&d->text, check, "note"));
    }
    putc(']', out);
}

static const struct {
    const char *name;
    ic_html_column_fn write;
} ic_case_columns[] = {
    {"cell", ic_column_cell},
    {"dtype", ic_column_dtype},
    {"layout", ic_column_layout},
    {"variant", ic_column_variant},
    {"outcome", ic_column_outcome},
    {"rule", ic_column_rule},
    {"diagnostic", ic_column_diagnostic},
    {"request", ic_column_request},
    {"exported", ic_column_exported},
    {"ms", ic_column_ms},
    {"checks", ic_column_checks},
};

/* The id the page rebuilds from a case's parts: protocol.producer.consumer.device.dtype.
 * layout[.variant]. */
static bool ic_html_id_is_derived(const cJSON *c)
{
    static const char *const parts[] = {"protocol", "producer", "consumer", "device",
                                        "dtype",    "layout",   "variant"};
    const char *id = ic_json_string(c, "id");
    if (!id)
        return true;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const char *part = ic_json_string(c, parts[i]);
        if (!part || !part[0]) {
            if (i + 1 == sizeof(parts) / sizeof(parts[0]))
                break; /* no variant */
            return false;
        }
        if (i > 0 && *id++ != '.')
            return false;
        size_t len = strlen(part);
        if (strncmp(id, part, len) != 0)
            return false;
        id += len;
    }
    return *id == '\0';
}

/* The ids the page cannot rebuild ([case, text index] pairs) and the expectations of cases
 * that have one ([case, pattern, reason, link, observed outcome]). */
static void ic_html_put_sparse(struct ic_html_data *d, const cJSON *cases, FILE *out)
{
    const cJSON *c;
    size_t i = 0;
    bool first = true;
    fputs(",\"ids\":[", out);
    cJSON_ArrayForEach(c, cases)
    {
        if (!ic_html_id_is_derived(c)) {
            fprintf(out, "%s[%zu,%zu]", first ? "" : ",", i, ic_intern_field(&d->text, c, "id"));
            first = false;
        }
        i++;
    }
    fputs("],\"expectations\":[", out);
    i = 0;
    first = true;
    cJSON_ArrayForEach(c, cases)
    {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "expectation");
        if (cJSON_IsObject(e)) {
            fprintf(out, "%s[%zu,%zu,%zu,%zu,%zu]", first ? "" : ",", i,
                    ic_intern_field(&d->text, e, "pattern"), ic_intern_field(&d->text, e, "reason"),
                    ic_intern_field(&d->text, e, "link"),
                    ic_intern_field(&d->outcomes, e, "observed"));
            first = false;
        }
        i++;
    }
    putc(']', out);
}

static void ic_html_put_table(FILE *out, const char *name, const struct ic_strtab *t)
{
    fprintf(out, ",\"%s\":[", name);
    for (size_t i = 0; i < t->count; i++) {
        if (i)
            putc(',', out);
        ic_html_put_string(out, t->items[i], IC_TEXT_FIELD_CAP);
    }
    putc(']', out);
}

static void ic_html_put_cells(FILE *out, const struct ic_html_data *d)
{
    static const char *const fields[] = {"protocol", "producer", "consumer",
                                         "device",   "env",      "gap"};
    fputs(",\"cells\":{", out);
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
        fprintf(out, "%s\"%s\":[", f ? "," : "", fields[f]);
        for (size_t i = 0; i < d->cell_keys.count; i++) {
            const struct ic_html_cell *cell = &d->cells[i];
            const size_t values[] = {cell->protocol, cell->producer,    cell->consumer,
                                     cell->device,   cell->environment, cell->gap_reason};
            fprintf(out, "%s%zu", i ? "," : "", values[f]);
        }
        putc(']', out);
    }
    putc('}', out);
}

/* Writes the data object. Returns 0 or IC_ENOMEM (the output is then incomplete). */
static int ic_html_put_data(FILE *out, const cJSON *report)
{
    struct ic_html_data d = {0};
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(report, "cases");
    const cJSON *c;

    ic_html_seed(&d, report);
    fputs("{\"format\":1,\"head\":{", out);
    static const char *const head[] = {"tool", "run", "environment", "environments", "findings"};
    bool first = true;
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(report, head[i]);
        if (!item)
            continue;
        fprintf(out, "%s\"%s\":", first ? "" : ",", head[i]);
        ic_html_put_value(out, item, IC_TEXT_FIELD_CAP);
        first = false;
    }
    fputs("},\"cases\":{", out);
    for (size_t col = 0; col < sizeof(ic_case_columns) / sizeof(ic_case_columns[0]); col++) {
        fprintf(out, "%s\"%s\":[", col ? "," : "", ic_case_columns[col].name);
        size_t i = 0;
        cJSON_ArrayForEach(c, cases)
        {
            if (i++)
                putc(',', out);
            ic_case_columns[col].write(&d, c, out);
        }
        putc(']', out);
    }
    putc('}', out);
    ic_html_put_sparse(&d, cases, out);

    /* Gaps become cells too, with their reason: the page shows them in the matrix. */
    const cJSON *summary = cJSON_GetObjectItemCaseSensitive(report, "summary");
    const cJSON *protocol;
    cJSON_ArrayForEach(protocol, cJSON_GetObjectItemCaseSensitive(summary, "protocols"))
    {
        const cJSON *gap;
        cJSON_ArrayForEach(gap, cJSON_GetObjectItemCaseSensitive(protocol, "gaps"))
        {
            size_t cell = ic_html_cell_of(&d, protocol->string, gap);
            const char *reason = ic_json_string(gap, "reason");
            if (!d.status && !d.cell_keys.status)
                d.cells[cell].gap_reason =
                    ic_strtab_intern(&d.text, reason && reason[0] ? reason : "no reason given");
        }
    }
    ic_html_put_cells(out, &d);

#define IC_HTML_PUT_TABLE(name) ic_html_put_table(out, #name, &d.name);
    IC_HTML_TABLES(IC_HTML_PUT_TABLE)
#undef IC_HTML_PUT_TABLE
    ic_html_put_table(out, "text", &d.text);
    putc('}', out);

    int rc = d.status;
#define IC_HTML_RELEASE(name)                                                                      \
    if (!rc)                                                                                       \
        rc = d.name.status;                                                                        \
    ic_strtab_release(&d.name);
    IC_HTML_TABLES(IC_HTML_RELEASE)
    IC_HTML_RELEASE(text)
    IC_HTML_RELEASE(cell_keys)
#undef IC_HTML_RELEASE
    free(d.cells);
    return rc;
}

/* --- The page -------------------------------------------------------------------------------- */

/* The page's style sheet and script, one string per line, written out as they are. Neither
 * holds text of the report: that reaches the page only through the data element, and the
 * script puts it into the page with textContent. */
static const char *const ic_html_style[] = {
    ":root {",
    "  --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --paper: #ffffff; --wash: #f6f8fa;",
    "  --focus: #0550ae;",
    "  --pass-bg: #aee3bb; --pass-ink: #0b3818;",
    "  --mixed-bg: #dcf1e1; --mixed-ink: #0b3818;",
    "  --fail-bg: #f8b4b0; --fail-ink: #5a0906;",
    "  --error-bg: #fbe19a; --error-ink: #463300;",
    "  --xpass-bg: #b9d7f8; --xpass-ink: #0a2e5c;",
    "  --xfail-bg: #ddd2f4; --xfail-ink: #2e1a5c;",
    "  --unsup-bg: #e3e5e8; --unsup-ink: #2f353b;",
    "}",
    "* { box-sizing: border-box; }",
    "html { font-size: 15px; }",
    "body {",
    "  margin: 0; color: var(--ink); background: var(--paper); line-height: 1.45;",
    "  font-family: system-ui, -apple-system, \"Segoe UI\", \"DejaVu Sans\", \"Liberation Sans\",",
    "    sans-serif;",
    "}",
    "code, pre, .mono {",
    "  font-family: ui-monospace, \"DejaVu Sans Mono\", \"Liberation Mono\", monospace;",
    "  font-size: 0.92em;",
    "}",
    "h1 { font-size: 1.6rem; margin: 0 0 0.2rem; }",
    "h2 { font-size: 1.2rem; margin: 0; display: inline; }",
    "h3 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; }",
    "a { color: var(--focus); }",
    ":focus-visible { outline: 3px solid var(--focus); outline-offset: 1px; }",
    ".wrap { max-width: 1500px; margin: 0 auto; padding: 0 1.25rem; }",
    "header.top {",
    "  background: var(--wash); border-bottom: 1px solid var(--line);",
    "  padding: 1rem 0 0.9rem;",
    "}",
    ".sub { color: var(--muted); margin: 0; }",
    ".totals { display: flex; flex-wrap: wrap; gap: 0.4rem; margin-top: 0.6rem; }",
    ".badge {",
    "  display: inline-block; padding: 0.05rem 0.45rem; border-radius: 0.3rem;",
    "  font-size: 0.85rem; white-space: nowrap; border: 1px solid rgba(0, 0, 0, 0.12);",
    "  font-variant-numeric: tabular-nums;",
    "}",
    ".badge.big { font-size: 0.95rem; padding: 0.15rem 0.6rem; }",
    ".o-pass, .c-pass { background: var(--pass-bg); color: var(--pass-ink); }",
    ".c-mixed { background: var(--mixed-bg); color: var(--mixed-ink); }",
    ".o-fail, .o-crash, .o-timeout, .c-fail {",
    "  background: var(--fail-bg); color: var(--fail-ink);",
    "}",
    ".o-error, .c-error { background: var(--error-bg); color: var(--error-ink); }",
    ".o-xpass, .c-xpass { background: var(--xpass-bg); color: var(--xpass-ink); }",
    ".o-xfail, .o-waived, .c-xfail { background: var(--xfail-bg); color: var(--xfail-ink); }",
    ".o-unsupported, .c-unsup { background: var(--unsup-bg); color: var(--unsup-ink); }",
    ".c-gap {",
    "  background: repeating-linear-gradient(135deg, #ffffff 0 5px, #eef0f2 5px 10px);",
    "  color: var(--muted);",
    "}",
    ".c-none {",
    "  background: var(--paper); color: var(--muted); border: 1px dashed var(--line);",
    "}",
    "section.block { margin: 1.2rem 0; }",
    "details.env > summary, details.libs > summary { cursor: pointer; font-weight: 600; }",
    "dl.facts {",
    "  display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem;",
    "  margin: 0.5rem 0;",
    "}",
    "dl.facts dt { color: var(--muted); }",
    "dl.facts dd { margin: 0; overflow-wrap: anywhere; }",
    ".unavailable { color: var(--fail-ink); }",
    "table.libs { border-collapse: collapse; margin: 0.4rem 0; width: 100%; }",
    "table.libs th, table.libs td {",
    "  border-bottom: 1px solid var(--line); padding: 0.25rem 0.6rem 0.25rem 0;",
    "  text-align: left; vertical-align: top;",
    "}",
    "table.libs th { color: var(--muted); font-weight: 600; }",
    "table.libs td.err {",
    "  color: var(--fail-ink); overflow-wrap: anywhere; white-space: pre-wrap;",
    "}",
    ".filters {",
    "  position: sticky; top: 0; z-index: 5; background: rgba(255, 255, 255, 0.97);",
    "  border-bottom: 1px solid var(--line); padding: 0.55rem 0; margin-bottom: 0.6rem;",
    "}",
    ".filters form { display: flex; flex-wrap: wrap; gap: 0.45rem 0.9rem; align-items: end; }",
    ".filters label {",
    "  display: flex; flex-direction: column; font-size: 0.8rem; color: var(--muted);",
    "}",
    ".filters select, .filters input[type=search] {",
    "  font: inherit; font-size: 0.9rem; color: var(--ink); padding: 0.15rem 0.3rem;",
    "  border: 1px solid #8c959f; border-radius: 0.25rem; background: var(--paper);",
    "  min-width: 7rem;",
    "}",
    ".filters label.check {",
    "  flex-direction: row; align-items: center; gap: 0.3rem; font-size: 0.9rem;",
    "  color: var(--ink);",
    "}",
    ".filters button, .panel button, .more {",
    "  font: inherit; font-size: 0.9rem; padding: 0.2rem 0.7rem; border-radius: 0.25rem;",
    "  border: 1px solid #8c959f; background: var(--wash); color: var(--ink);",
    "  cursor: pointer;",
    "}",
    ".status { margin: 0.4rem 0 0; font-size: 0.9rem; color: var(--muted); }",
    ".legend {",
    "  display: flex; flex-wrap: wrap; gap: 0.35rem 1rem; margin: 0.3rem 0 0.8rem;",
    "  padding: 0; list-style: none; font-size: 0.88rem;",
    "}",
    ".legend li { display: flex; align-items: center; gap: 0.4rem; }",
    ".legend .swatch {",
    "  display: inline-block; min-width: 2.2rem; text-align: center; border-radius: 0.2rem;",
    "  border: 1px solid rgba(0, 0, 0, 0.15); font-weight: 700; padding: 0 0.2rem;",
    "}",
    ".note { color: var(--muted); font-size: 0.9rem; margin: 0.3rem 0; }",
    "section.matrix { border-top: 1px solid var(--line); padding: 0.6rem 0 0.4rem; }",
    "section.matrix > details > summary { cursor: pointer; padding: 0.2rem 0; }",
    ".gsum { color: var(--muted); margin-left: 0.6rem; font-size: 0.92rem; }",
    ".scroll { overflow-x: auto; padding-bottom: 0.3rem; }",
    "table.grid { border-collapse: separate; border-spacing: 2px; font-size: 0.82rem; }",
    "table.grid th { font-weight: 600; color: var(--ink); }",
    "table.grid thead th { vertical-align: bottom; padding: 0 0 0.3rem; }",
    "table.grid thead th span {",
    "  writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap;",
    "  display: inline-block; max-height: 11rem; overflow: hidden; text-overflow: ellipsis;",
    "}",
    "table.grid thead th.corner {",
    "  text-align: left; writing-mode: horizontal-tb; color: var(--muted); font-weight: 400;",
    "  font-size: 0.8rem;",
    "}",
    "table.grid tbody th { text-align: right; padding-right: 0.5rem; white-space: nowrap; }",
    "table.grid td { padding: 0; }",
    "button.cell {",
    "  display: block; min-width: 4.6rem; width: 100%; height: 2.6rem;",
    "  padding: 0.1rem 0.15rem; border: 1px solid rgba(0, 0, 0, 0.14);",
    "  border-radius: 0.2rem; font: inherit; font-size: 0.8rem; line-height: 1.15;",
    "  cursor: pointer; font-variant-numeric: tabular-nums; text-align: center;",
    "  overflow: hidden;",
    "}",
    "button.cell .l1 { display: block; font-weight: 700; white-space: nowrap; }",
    "button.cell .l2 { display: block; font-size: 0.72rem; white-space: nowrap; }",
    "button.cell:hover { filter: brightness(0.94); }",
    "button.cell[aria-pressed=true] { outline: 3px solid var(--ink); outline-offset: 1px; }",
    ".panel {",
    "  scroll-margin-top: 9rem;",
    "  border: 1px solid var(--line); border-left: 4px solid var(--focus);",
    "  border-radius: 0.3rem; margin: 0.6rem 0 0.8rem; padding: 0.6rem 0.8rem;",
    "  background: var(--paper);",
    "}",
    ".panel header {",
    "  display: flex; justify-content: space-between; align-items: start; gap: 1rem;",
    "}",
    ".panel h3 { margin: 0; }",
    ".panel .reason { white-space: pre-wrap; overflow-wrap: anywhere; }",
    "ul.cases {",
    "  list-style: none; margin: 0.5rem 0 0; padding: 0 0.3rem 0 0; max-height: 75vh;",
    "  overflow-y: auto;",
    "}",
    "ul.cases > li { border-top: 1px solid var(--line); }",
    "details.case > summary {",
    "  cursor: pointer; padding: 0.3rem 0; display: flex; gap: 0.6rem;",
    "  align-items: baseline; list-style-position: outside; min-width: 0;",
    "}",
    "details.case > summary::before { content: \"\\25b8\"; color: var(--muted); }",
    "details.case[open] > summary::before { content: \"\\25be\"; }",
    "details.case > summary::-webkit-details-marker { display: none; }",
    "details.case > summary .id { white-space: nowrap; }",
    "details.case > summary .brief {",
    "  color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap;",
    "  min-width: 0; flex: 1;",
    "}",
    ".casebody { padding: 0.2rem 0 0.7rem 1.3rem; }",
    "dl.kv {",
    "  display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 0.9rem;",
    "  margin: 0 0 0.5rem;",
    "}",
    "dl.kv dt { color: var(--muted); }",
    "dl.kv dd { margin: 0; min-width: 0; }",
    "pre.text {",
    "  margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem;",
    "  overflow-y: auto; background: var(--wash); padding: 0.2rem 0.4rem;",
    "  border-radius: 0.2rem;",
    "}",
    "table.checks { border-collapse: collapse; font-size: 0.88rem; width: 100%; }",
    "table.checks th, table.checks td {",
    "  text-align: left; padding: 0.2rem 0.7rem 0.2rem 0;",
    "  border-bottom: 1px solid var(--line); vertical-align: top;",
    "}",
    "table.checks th { color: var(--muted); font-weight: 600; }",
    "table.checks td.note { overflow-wrap: anywhere; white-space: pre-wrap; }",
    ".st-pass { color: var(--pass-ink); }",
    ".st-fail { color: var(--fail-ink); font-weight: 700; }",
    ".st-skip { color: var(--muted); }",
    "footer { color: var(--muted); font-size: 0.85rem; padding: 1.5rem 0 2rem; }",
    "h4 { font-size: 0.95rem; margin: 0.6rem 0 0.3rem; }",
    "table.causes { border-collapse: collapse; font-size: 0.88rem; }",
    "table.causes td { padding: 0.15rem 0.7rem 0.15rem 0; vertical-align: top; }",
    "table.causes td.what { overflow-wrap: anywhere; }",
    "section.findings details.finding { border-left: 4px solid var(--line); margin: 0.3rem 0;",
    "  padding: 0.2rem 0.6rem; background: var(--wash); }",
    "section.findings details.sev-harmful { border-left-color: #cf222e; }",
    "section.findings details.sev-nonconformant { border-left-color: #bf8700; }",
    "section.findings details.sev-documented { border-left-color: #8250df; }",
    "section.findings summary { cursor: pointer; }",
    "section.findings summary > * { margin-right: 0.7rem; }",
    "section.findings .sev { font-weight: 600; }",
    "section.findings .what { overflow-wrap: anywhere; }",
    "section.findings pre.repro { overflow-x: auto; background: var(--paper); padding: 0.5rem;",
    "  border: 1px solid var(--line); font-size: 0.8rem; }",
    NULL,
};

static const char *const ic_html_script[] = {
    "'use strict';",
    "(function () {",
    "  const started = performance.now();",
    "  const data = JSON.parse(document.getElementById('ic-data').textContent);",
    "  const app = document.getElementById('app');",
    "  const text = data.text;",
    "  const cases = data.cases;",
    "  const cells = data.cells;",
    "  const ncases = cases.cell.length;",
    "  const ncells = cells.protocol.length;",
    "  const outcomes = data.outcomes;",
    "  const nout = outcomes.length;",
    "  // Outcomes from the most to the least severe: a cell's list shows cases in this order.",
    "  const SEVERITY = ['crash', 'timeout', 'fail', 'error', 'xpass', 'waived', 'xfail',",
    "    'unsupported', 'pass'];",
    "  const CHECK = '\\u2713';",
    "  const CROSS = '\\u2717';",
    "  const DASH = '\\u2013';",
    "  const NEAR = '\\u2248';",
    "  const EM = ' \\u2014 ';",
    "  const DOT = ' \\u00b7 ';",
    "  const MARK = {pass: CHECK, fail: CROSS, crash: CROSS, timeout: CROSS, error: '!',",
    "    unsupported: DASH, xfail: NEAR, waived: NEAR, xpass: '+'};",
    "  const SHORT = {pass: 'pass', fail: 'fail', crash: 'crash', timeout: 'timeout',",
    "    error: 'error', unsupported: 'unsup.', xfail: 'xfail', waived: 'waived', xpass: 'xpass'};",
    "  // What a cell's colour says; the mark repeats it for readers who do not see colour.",
    "  const CATEGORIES = [",
    "    ['fail', CROSS, 'some cases failed, crashed or timed out'],",
    "    ['error', '!', 'errors of interopcheck or the environment, not of the libraries'],",
    "    ['xpass', '+', 'a case expected to fail passed: update the expectations'],",
    "    ['xfail', NEAR, 'failures, all of them expected or waived'],",
    "    ['pass', CHECK, 'every case passed'],",
    "    ['mixed', CHECK, 'every supported case passed; the others are unsupported'],",
    "    ['unsup', DASH,",
    "      'every case unsupported: refused as the protocol allows, or not expressible'],",
    "    ['gap', 'n/a', 'no cases: the pair cannot exchange this way (hover or click for why)'],",
    "    ['none', '0', 'cases, but none matches the filters'],",
    "  ];",
    "  const MARKS = Object.fromEntries(CATEGORIES.map((c) => [c[0], c[1]]));",
    "  const outcomeIndex = (name) => outcomes.indexOf(name);",
    "  const severityRank = outcomes.map((o) => {",
    "    const r = SEVERITY.indexOf(o);",
    "    return r < 0 ? SEVERITY.length : r;",
    "  });",
    "  const passIndex = [outcomeIndex('pass'), outcomeIndex('xpass')].filter((i) => i >= 0);",
    "  // --- small DOM helpers: every text goes in through textContent",
    "  function el(tag, cls, content) {",
    "    const node = document.createElement(tag);",
    "    if (cls) node.className = cls;",
    "    if (content !== undefined && content !== null) {",
    "      if (Array.isArray(content)) {",
    "        for (const c of content) if (c !== null && c !== undefined) node.append(c);",
    "      } else if (content instanceof Node) {",
    "        node.append(content);",
    "      } else {",
    "        node.textContent = shown(String(content));",
    "      }",
    "    }",
    "    return node;",
    "  }",
    "  // Control characters become their visible pictures (U+2400...), so that a message that",
    "  // carries them shows where they are instead of hiding them.",
    "  function shown(s) {",
    "    return s.replace(/[\\u0000-\\u0008\\u000b-\\u001f\\u007f]/g, (ch) =>",
    "      String.fromCharCode(ch === '\\u007f' ? 0x2421 : 0x2400 + ch.charCodeAt(0)));",
    "  }",
    "  const fmt = (n) => n.toLocaleString('en-US');",
    "  function clip(s, n) {",
    "    return s.length > n ? s.slice(0, n) + '\\u2026' : s;",
    "  }",
    "  function longText(s) {",
    "    const LIMIT = 4000;",
    "    const pre = el('pre', 'text', s.length > LIMIT ? s.slice(0, LIMIT) + ' \\u2026' : s);",
    "    if (s.length <= LIMIT) return pre;",
    "    const more = el('button', 'more', 'Show all ' + fmt(s.length) + ' characters');",
    "    more.type = 'button';",
    "    more.addEventListener('click', () => {",
    "      pre.textContent = shown(s);",
    "      more.remove();",
    "    });",
    "    return el('div', null, [pre, more]);",
    "  }",
    "  function badge(outcome, count) {",
    "    const label = (MARK[outcome] || '?') + ' ' + (count === undefined ? outcome :",
    "      fmt(count) + ' ' + outcome);",
    "    return el('span', 'badge o-' + outcome, label);",
    "  }",
    "  // --- the cases",
    "  const ids = new Map(data.ids.map((p) => [p[0], text[p[1]]]));",
    "  const expectations = new Map(data.expectations.map((e) => [e[0], e]));",
    "  function caseId(i) {",
    "    const k = cases.cell[i];",
    "    if (ids.has(i)) return ids.get(i);",
    "    let id = [data.protocols[cells.protocol[k]], data.libraries[cells.producer[k]],",
    "      data.libraries[cells.consumer[k]], data.devices[cells.device[k]],",
    "      data.dtypes[cases.dtype[i]], data.layouts[cases.layout[i]]].join('.');",
    "    if (cases.variant[i]) id += '.' + data.variants[cases.variant[i]];",
    "    return id;",
    "  }",
    "  const cellTotal = new Int32Array(ncells);",
    "  for (let i = 0; i < ncases; i++) cellTotal[cases.cell[i]]++;",
    "  // Matrices: one per (protocol, device, environment) that has cells, in table order.",
    "  const groupsByKey = new Map();",
    "  for (let k = 0; k < ncells; k++) {",
    "    const key = cells.protocol[k] + ',' + cells.device[k] + ',' + cells.env[k];",
    "    let g = groupsByKey.get(key);",
    "    if (!g) {",
    "      g = {protocol: cells.protocol[k], device: cells.device[k], env: cells.env[k],",
    "        cells: [], lookup: new Map(), total: 0};",
    "      groupsByKey.set(key, g);",
    "    }",
    "    g.cells.push(k);",
    "    g.lookup.set(cells.producer[k] + ',' + cells.consumer[k], k);",
    "    g.total += cellTotal[k];",
    "  }",
    "  const groups = [...groupsByKey.values()].sort((a, b) =>",
    "    a.protocol - b.protocol || a.device - b.device || a.env - b.env);",
    "  const merged = data.environments.length > 1;",
    "  // --- filters",
    "  const FILTERS = [",
    "    ['producer', 'Producer', data.libraries],",
    "    ['consumer', 'Consumer', data.libraries],",
    "    ['protocol', 'Protocol', data.protocols],",
    "    ['device', 'Device', data.devices],",
    "    ['env', 'Environment', data.environments],",
    "    ['dtype', 'Dtype', data.dtypes],",
    "    ['layout', 'Layout', data.layouts],",
    "    ['outcome', 'Outcome', outcomes],",
    "  ];",
    "  const filter = {producer: -1, consumer: -1, protocol: -1, device: -1, env: -1, dtype: -1,",
    "    layout: -1, outcome: -1, id: '', all: false};",
    "  const counts = new Int32Array(ncells * nout);",
    "  let shownTotal = 0;",
    "  const shownByOutcome = new Int32Array(nout);",
    "  function cellPasses(k) {",
    "    return (filter.producer < 0 || cells.producer[k] === filter.producer) &&",
    "      (filter.consumer < 0 || cells.consumer[k] === filter.consumer) &&",
    "      (filter.protocol < 0 || cells.protocol[k] === filter.protocol) &&",
    "      (filter.device < 0 || cells.device[k] === filter.device) &&",
    "      (filter.env < 0 || cells.env[k] === filter.env);",
    "  }",
    "  function casePasses(i) {",
    "    return (filter.dtype < 0 || cases.dtype[i] === filter.dtype) &&",
    "      (filter.layout < 0 || cases.layout[i] === filter.layout) &&",
    "      (filter.outcome < 0 || cases.outcome[i] === filter.outcome) &&",
    "      (!filter.id || caseId(i).includes(filter.id));",
    "  }",
    "  const cellOk = new Uint8Array(ncells);",
    "  function recount() {",
    "    counts.fill(0);",
    "    shownByOutcome.fill(0);",
    "    shownTotal = 0;",
    "    for (let k = 0; k < ncells; k++) cellOk[k] = cellPasses(k) ? 1 : 0;",
    "    for (let i = 0; i < ncases; i++) {",
    "      const k = cases.cell[i];",
    "      if (!cellOk[k] || !casePasses(i)) continue;",
    "      counts[k * nout + cases.outcome[i]]++;",
    "      shownByOutcome[cases.outcome[i]]++;",
    "      shownTotal++;",
    "    }",
    "  }",
    "  const filtering = () => FILTERS.some((f) => filter[f[0]] >= 0) || filter.id !== '';",
    "  // Counts of a cell after the filters, by outcome name.",
    "  function cellSummary(k) {",
    "    const byName = {};",
    "    let total = 0;",
    "    let passed = 0;",
    "    for (let o = 0; o < nout; o++) {",
    "      const n = counts[k * nout + o];",
    "      if (!n) continue;",
    "      byName[outcomes[o]] = n;",
    "      total += n;",
    "    }",
    "    for (const o of passIndex) passed += counts[k * nout + o];",
    "    return {byName, total, passed};",
    "  }",
    "  function category(s) {",
    "    const n = (name) => s.byName[name] || 0;",
    "    if (!s.total) return 'none';",
    "    if (n('fail') + n('crash') + n('timeout')) return 'fail';",
    "    if (n('error')) return 'error';",
    "    if (n('xpass')) return 'xpass';",
    "    if (n('xfail') + n('waived')) return 'xfail';",
    "    if (n('pass') === s.total) return 'pass';",
    "    if (n('pass')) return 'mixed';",
    "    if (n('unsupported') === s.total) return 'unsup';",
    "    return 'error'; // an outcome this page does not know",
    "  }",
    "  function breakdown(s) {",
    "    return SEVERITY.filter((o) => s.byName[o]).map((o) => fmt(s.byName[o]) + ' ' + o)",
    "      .join(', ');",
    "  }",
    "  // --- the header",
    "  const head = data.head;",
    "  function when(iso) {",
    "    return typeof iso === 'string' ? iso.replace('T', ' ').replace(/Z$/, ' UTC') : '?';",
    "  }",
    "  function seconds(s) {",
    "    if (typeof s !== 'number') return '?';",
    "    return s < 120 ? s.toFixed(1) + ' s' : Math.floor(s / 60) + ' min ' +",
    "      Math.round(s % 60) + ' s';",
    "  }",
    "  function facts(pairs) {",
    "    const dl = el('dl', 'facts');",
    "    for (const [name, value] of pairs) {",
    "      if (value === null || value === undefined || value === '') continue;",
    "      dl.append(el('dt', null, name), el('dd', null, value));",
    "    }",
    "    return dl;",
    "  }",
    "  function devicesText(devices) {",
    "    const list = el('div');",
    "    for (const [name, d] of Object.entries(devices || {})) {",
    "      const line = el('div', d.available ? null : 'unavailable');",
    "      line.append(el('strong', null, name + ': '),",
    "        (d.available ? 'available' : 'not available') + (d.detail ? EM + d.detail : ''));",
    "      list.append(line);",
    "    }",
    "    return list;",
    "  }",
    "  function libraryTable(libraries) {",
    "    const table = el('table', 'libs');",
    "    const hr = el('tr');",
    "    for (const h of ['library', 'version', 'status', 'exports', 'imports'])",
    "      hr.append(el('th', null, h));",
    "    table.append(el('thead', null, hr));",
    "    const body = el('tbody');",
    "    const STATUS = {loaded: 'loaded', not_installed: 'not installed', import_error: 'import "
    "error',",
    "      import_crash: 'crashed on import', invalid_probe: 'invalid probe'};",
    "    // Probes the run found but did not need (its filters left them out) take one line.",
    "    const idle = (libraries || []).filter((lib) => lib.status === 'not_loaded');",
    "    for (const lib of libraries || []) {",
    "      if (lib.status === 'not_loaded') continue;",
    "      const tr = el('tr');",
    "      tr.append(el('td', 'mono', lib.name), el('td', 'mono', lib.version || '\\u2014'));",
    "      if (lib.status === 'loaded') {",
    "        tr.append(el('td', null, 'loaded'),",
    "          el('td', null, (lib.exports || []).join(', ') || '\\u2014'),",
    "          el('td', null, (lib.imports || []).join(', ') || '\\u2014'));",
    "      } else {",
    "        const cell = el('td', 'err', (STATUS[lib.status] || lib.status) +",
    "          (lib.error ? ': ' + lib.error : ''));",
    "        cell.colSpan = 3;",
    "        tr.append(cell);",
    "      }",
    "      body.append(tr);",
    "    }",
    "    table.append(body);",
    "    if (!idle.length) return table;",
    "    return el('div', null, [table, el('p', 'note', 'Not loaded, as this run did not need ' +",
    "      'them: ' + idle.map((lib) => lib.name).join(', ') + '.')]);",
    "  }",
    "  function environmentBlock(tool, run, env, open, title) {",
    "    const box = el('details', 'env');",
    "    box.open = open;",
    "    box.append(el('summary', null, title));",
    "    const build = (tool && tool.build) || {};",
    "    const platform = env.platform || {};",
    "    const python = env.python || {};",
    "    const filters = Object.entries((run && run.filters) || {})",
    "      .filter((f) => f[1] && f[1].length).map((f) => f[0] + ' = ' + f[1].join(', '));",
    "    box.append(facts([",
    "      ['interopcheck', (tool && tool.version || '?') + ' (' + [build.build_type,",
    "        build.compiler].filter(Boolean).join(', ') + ')'],",
    "      ['DLPack header', build.dlpack_header_version],",
    "      ['Platform', [platform.system, platform.release, platform.machine].filter(Boolean)",
    "        .join(' ') + (platform.host ? ' (host ' + platform.host + ')' : '')],",
    "      ['Python', (python.version || '?') +",
    "        (python.executable ? EM + python.executable : '')],",
    "      ['Devices', devicesText(env.devices)],",
    "      ['Run', run ? when(run.started) + ', ' + seconds(run.duration_s) + ', seed ' +",
    "        run.seed + ', ' + run.jobs + ' jobs, timeout ' + run.timeout_s + ' s' : null],",
    "      ['Probes from', run && (run.probe_dirs || []).join(', ')],",
    "      ['Selected', filters.length ? filters.join('; ') : 'everything (no filters)'],",
    "    ]));",
    "    box.append(el('h3', null, 'Libraries'), libraryTable(env.libraries));",
    "    return box;",
    "  }",
    "  function renderHeader() {",
    "    const tool = head.tool || {};",
    "    const run = head.run || {};",
    "    const env = head.environment || {};",
    "    const python = env.python || {};",
    "    const top = el('header', 'top');",
    "    const wrap = el('div', 'wrap');",
    "    wrap.append(el('h1', null, 'interopcheck report'));",
    "    wrap.append(el('p', 'sub', 'interopcheck ' + (tool.version || '?') + DOT +",
    "      (merged ? (head.environments || []).length + ' environments merged' + DOT +",
    "        'first run ' : 'run ') + when(run.started) + DOT + seconds(run.duration_s) + DOT +",
    "      'seed ' + run.seed + DOT + 'Python ' + (python.version || '?')));",
    "    const totals = el('div', 'totals');",
    "    totals.append(el('span', 'badge big', fmt(ncases) + ' cases'));",
    "    const all = new Int32Array(nout);",
    "    for (let i = 0; i < ncases; i++) all[cases.outcome[i]]++;",
    "    for (const o of SEVERITY) {",
    "      const index = outcomeIndex(o);",
    "      if (index >= 0 && all[index]) totals.append(badge(o, all[index]));",
    "    }",
    "    wrap.append(totals);",
    "    top.append(wrap);",
    "    document.title = 'interopcheck report \\u00b7 ' + when(run.started);",
    "    return top;",
    "  }",
    "  function renderEnvironments() {",
    "    const section = el('section', 'block wrap');",
    "    if (merged && Array.isArray(head.environments)) {",
    "      section.append(el('h2', null, 'Environments'));",
    "      head.environments.forEach((e, n) => {",
    "        section.append(environmentBlock(e.tool, e.run, e.environment || {}, n === 0,",
    "          'Environment ' + e.id));",
    "      });",
    "    } else {",
    "      section.append(environmentBlock(head.tool, head.run, head.environment || {}, true,",
    "        'Environment and libraries'));",
    "    }",
    "    return section;",
    "  }",
    "  // --- filters bar",
    "  const selects = {};",
    "  let statusLine;",
    "  function renderFilters() {",
    "    const bar = el('div', 'filters');",
    "    const form = el('form', 'wrap');",
    "    form.setAttribute('role', 'search');",
    "    form.addEventListener('submit', (e) => e.preventDefault());",
    "    const usedAs = {producer: new Set(), consumer: new Set()};",
    "    for (let k = 0; k < ncells; k++) {",
    "      usedAs.producer.add(cells.producer[k]);",
    "      usedAs.consumer.add(cells.consumer[k]);",
    "    }",
    "    for (const [key, label, names] of FILTERS) {",
    "      if (key === 'env' && !merged) continue;",
    "      const select = el('select');",
    "      select.name = key;",
    "      select.append(el('option', null, 'all'));",
    "      select.lastChild.value = '-1';",
    "      names.forEach((name, index) => {",
    "        if (key === 'env' && index === 0) return;",
    "        if ((key === 'producer' || key === 'consumer') && !usedAs[key].has(index)) return;",
    "        const option = el('option', null, name);",
    "        option.value = String(index);",
    "        select.append(option);",
    "      });",
    "      select.addEventListener('change', () => {",
    "        filter[key] = Number(select.value);",
    "        update();",
    "      });",
    "      selects[key] = select;",
    "      form.append(el('label', null, [label, select]));",
    "    }",
    "    const search = el('input');",
    "    search.type = 'search';",
    "    search.name = 'id';",
    "    search.placeholder = 'part of a case id';",
    "    let timer = 0;",
    "    search.addEventListener('input', () => {",
    "      clearTimeout(timer);",
    "      timer = setTimeout(() => {",
    "        filter.id = search.value.trim().toLowerCase();",
    "        update();",
    "      }, 200);",
    "    });",
    "    selects.id = search;",
    "    form.append(el('label', null, ['Case id contains', search]));",
    "    const all = el('input');",
    "    all.type = 'checkbox';",
    "    all.name = 'all';",
    "    all.addEventListener('change', () => {",
    "      filter.all = all.checked;",
    "      update();",
    "    });",
    "    selects.all = all;",
    "    form.append(el('label', 'check', [all, 'Show libraries without cases']));",
    "    const reset = el('button', null, 'Reset filters');",
    "    reset.type = 'button';",
    "    reset.addEventListener('click', () => {",
    "      for (const [key] of FILTERS) {",
    "        filter[key] = -1;",
    "        if (selects[key]) selects[key].value = '-1';",
    "      }",
    "      filter.id = '';",
    "      search.value = '';",
    "      update();",
    "    });",
    "    form.append(reset);",
    "    bar.append(form);",
    "    statusLine = el('p', 'status wrap');",
    "    statusLine.id = 'status';",
    "    bar.append(statusLine);",
    "    return bar;",
    "  }",
    "  function renderStatus() {",
    "    const parts = [];",
    "    for (const o of SEVERITY) {",
    "      const index = outcomeIndex(o);",
    "      if (index >= 0 && shownByOutcome[index])",
    "        parts.push(fmt(shownByOutcome[index]) + ' ' + o);",
    "    }",
    "    statusLine.dataset.shown = String(shownTotal);",
    "    statusLine.textContent = (filtering() ? 'Showing ' + fmt(shownTotal) + ' of ' +",
    "      fmt(ncases) + ' cases' : 'All ' + fmt(ncases) + ' cases') +",
    "      (parts.length ? ': ' + parts.join(', ') : '') + '.';",
    "  }",
    "  function renderLegend() {",
    "    const box = el('section', 'block wrap');",
    "    box.append(el('h2', null, 'Matrices'));",
    "    box.append(el('p', 'note', 'One matrix per protocol and device' + (merged ?",
    "      ' and environment' : '') + ': rows are producers, columns consumers. A cell shows ' +",
    "      'passed/total (of the cases the filters leave) and its most severe other outcome; ' +",
    "      'click it for its cases.'));",
    "    const list = el('ul', 'legend');",
    "    list.setAttribute('aria-label', 'Legend');",
    "    for (const [key, mark, meaning] of CATEGORIES) {",
    "      list.append(el('li', null, [el('span', 'swatch c-' + key, mark), meaning]));",
    "    }",
    "    box.append(list);",
    "    return box;",
    "  }",
    "  // --- matrices",
    "  const matricesRoot = el('div', 'wrap');",
    "  let selected = -1; // the cell whose cases are listed",
    "  function groupTitle(g) {",
    "    return data.protocols[g.protocol] + ' on ' + data.devices[g.device] +",
    "      (merged ? ' \\u00b7 ' + data.environments[g.env] : '');",
    "  }",
    "  function cellLabel(k) {",
    "    return data.protocols[cells.protocol[k]] + ': ' + data.libraries[cells.producer[k]] +",
    "      ' \\u2192 ' + data.libraries[cells.consumer[k]] + ' on ' +",
    "      data.devices[cells.device[k]] +",
    "      (merged ? ' (' + data.environments[cells.env[k]] + ')' : '');",
    "  }",
    "  function renderCell(k) {",
    "    const button = el('button', 'cell');",
    "    button.type = 'button';",
    "    button.dataset.cell = String(k);",
    "    button.dataset.producer = data.libraries[cells.producer[k]];",
    "    button.dataset.consumer = data.libraries[cells.consumer[k]];",
    "    let tip;",
    "    if (!cellTotal[k]) {",
    "      button.classList.add('c-gap');",
    "      button.dataset.category = 'gap';",
    "      button.append(el('span', 'l1', 'n/a'), el('span', 'l2', 'no cases'));",
    "      tip = cellLabel(k) + ': no cases. ' + text[cells.gap[k]];",
    "    } else {",
    "      const s = cellSummary(k);",
    "      const cat = category(s);",
    "      button.classList.add('c-' + cat);",
    "      button.dataset.category = cat;",
    "      button.dataset.passed = String(s.passed);",
    "      button.dataset.total = String(s.total);",
    "      if (!s.total) {",
    "        button.append(el('span', 'l1', '0'), el('span', 'l2', 'no match'));",
    "        tip = cellLabel(k) + ': none of its ' + fmt(cellTotal[k]) +",
    "          ' cases matches the filters';",
    "      } else {",
    "        const worst = SEVERITY.find((o) => o !== 'pass' && s.byName[o]);",
    "        const other = worst ? fmt(s.byName[worst]) + ' ' + SHORT[worst] : 'all pass';",
    "        button.append(el('span', 'l1', s.passed + '/' + s.total),",
    "          el('span', 'l2', MARKS[cat] + ' ' + other));",
    "        tip = cellLabel(k) + ': ' + s.passed + ' of ' + s.total + ' passed (' +",
    "          breakdown(s) + ')';",
    "      }",
    "    }",
    "    button.title = shown(tip);",
    "    button.setAttribute('aria-label', shown(tip));",
    "    button.setAttribute('aria-pressed', k === selected ? 'true' : 'false');",
    "    button.addEventListener('click', () => select(k === selected ? -1 : k));",
    "    return button;",
    "  }",
    "  // Filters that select cases rather than cells: gaps, having no cases, never match them.",
    "  const caseFiltering = () => filter.dtype >= 0 || filter.layout >= 0 ||",
    "    filter.outcome >= 0 || filter.id !== '';",
    "  function renderGroup(g) {",
    "    const visible = g.cells.filter((k) => cellOk[k]);",
    "    let matching = 0;",
    "    let present = 0;",
    "    for (const k of visible) {",
    "      matching += cellSummary(k).total;",
    "      present += cellTotal[k];",
    "    }",
    "    if (!visible.length || (caseFiltering() && !matching)) return null;",
    "    const onlyGaps = present === 0;",
    "    // Rows and columns: the libraries with cases here (or all of them, when asked or when",
    "    // the matrix has nothing but gaps, whose reasons are then what it shows).",
    "    const rows = new Set();",
    "    const cols = new Set();",
    "    let hiddenRows = new Set();",
    "    let hiddenCols = new Set();",
    "    for (const k of visible) {",
    "      const wanted = filter.all || onlyGaps || cellSummary(k).total > 0;",
    "      (wanted ? rows : hiddenRows).add(cells.producer[k]);",
    "      (wanted ? cols : hiddenCols).add(cells.consumer[k]);",
    "    }",
    "    hiddenRows = [...hiddenRows].filter((r) => !rows.has(r));",
    "    hiddenCols = [...hiddenCols].filter((c) => !cols.has(c));",
    "    const order = (a, b) => a - b;",
    "    const rowList = [...rows].sort(order);",
    "    const colList = [...cols].sort(order);",
    "    const section = el('section', 'matrix');",
    "    section.dataset.protocol = data.protocols[g.protocol];",
    "    section.dataset.device = data.devices[g.device];",
    "    if (merged) section.dataset.env = data.environments[g.env];",
    "    const details = el('details');",
    "    details.open = !onlyGaps || filter.all;",
    "    const summary = el('summary');",
    "    let passed = 0;",
    "    for (const k of visible) passed += cellSummary(k).passed;",
    "    summary.append(el('h2', null, groupTitle(g)));",
    "    summary.append(el('span', 'gsum', onlyGaps ? 'no cases: no pair of libraries ' +",
    "      'exchanges this way here (open for the reasons)' : fmt(passed) + '/' + fmt(matching) +",
    "      ' passed'));",
    "    details.append(summary);",
    "    if (hiddenRows.length || hiddenCols.length) {",
    "      details.append(el('p', 'note', 'Hidden here, without ' + (filtering() ?",
    "        'matching ' : '') + 'cases: ' + [hiddenRows.length ? hiddenRows.length +",
    "        ' producer' + (hiddenRows.length > 1 ? 's' : '') : '', hiddenCols.length ?",
    "        hiddenCols.length + ' consumer' + (hiddenCols.length > 1 ? 's' : '') : '']",
    "        .filter(Boolean).join(' and ') +",
    "        ' (\\u201cShow libraries without cases\\u201d shows them).'));",
    "    }",
    "    const table = el('table', 'grid');",
    "    table.setAttribute('aria-label', groupTitle(g) + ': producers by consumers');",
    "    const hr = el('tr');",
    "    hr.append(el('th', 'corner', 'producer \\u2193 consumer \\u2192'));",
    "    for (const c of colList) {",
    "      const th = el('th', null, el('span', null, data.libraries[c]));",
    "      th.scope = 'col';",
    "      hr.append(th);",
    "    }",
    "    table.append(el('thead', null, hr));",
    "    const body = el('tbody');",
    "    for (const r of rowList) {",
    "      const tr = el('tr');",
    "      const th = el('th', null, data.libraries[r]);",
    "      th.scope = 'row';",
    "      tr.append(th);",
    "      for (const c of colList) {",
    "        const k = g.lookup.get(r + ',' + c);",
    "        const td = el('td');",
    "        if (k !== undefined && cellOk[k]) td.append(renderCell(k));",
    "        tr.append(td);",
    "      }",
    "      body.append(tr);",
    "    }",
    "    table.append(body);",
    "    details.append(el('div', 'scroll', table));",
    "    section.append(details);",
    "    if (selected >= 0 && g.cells.includes(selected) && cellOk[selected]) {",
    "      details.open = true;",
    "      details.append(renderPanel(selected));",
    "    }",
    "    return section;",
    "  }",
    "  function renderMatrices() {",
    "    matricesRoot.replaceChildren();",
    "    let drawn = 0;",
    "    for (const g of groups) {",
    "      const section = renderGroup(g);",
    "      if (section) {",
    "        matricesRoot.append(section);",
    "        drawn++;",
    "      }",
    "    }",
    "    if (!drawn) {",
    "      matricesRoot.append(el('p', 'note', filtering() ? 'No case matches the filters.' :",
    "        'This report has no cases.'));",
    "    }",
    "  }",
    "  // --- a cell's cases",
    "  const PAGE = 200;",
    "  function renderPanel(k) {",
    "    const panel = el('div', 'panel');",
    "    panel.id = 'panel';",
    "    panel.tabIndex = -1;",
    "    panel.setAttribute('role', 'region');",
    "    panel.setAttribute('aria-label', 'Cases of ' + cellLabel(k));",
    "    const top = el('header');",
    "    const close = el('button', null, 'Close');",
    "    close.type = 'button';",
    "    close.addEventListener('click', () => select(-1));",
    "    top.append(el('h3', null, cellLabel(k)), close);",
    "    panel.append(top);",
    "    if (!cellTotal[k]) {",
    "      panel.append(el('p', 'reason', 'No cases: ' + text[cells.gap[k]]));",
    "      return panel;",
    "    }",
    "    const list = [];",
    "    for (let i = 0; i < ncases; i++) {",
    "      if (cases.cell[i] === k && casePasses(i)) list.push(i);",
    "    }",
    "    list.sort((a, b) => severityRank[cases.outcome[a]] - severityRank[cases.outcome[b]] ||",
    "      cases.dtype[a] - cases.dtype[b] || cases.layout[a] - cases.layout[b] ||",
    "      cases.variant[a] - cases.variant[b]);",
    "    const s = cellSummary(k);",
    "    panel.append(el('p', 'note', s.total ? fmt(s.passed) + ' of ' + fmt(s.total) +",
    "      (filtering() ? ' matching' : '') + ' cases passed' + (breakdown(s) ? ': ' +",
    "      breakdown(s) : '') + '. Below, failures come first; open a case for its checks.' :",
    "      'None of its ' + fmt(cellTotal[k]) + ' cases matches the filters.'));",
    "    panel.append(renderCauses(list));",
    "    const ul = el('ul', 'cases');",
    "    panel.append(ul);",
    "    let opened = 0;",
    "    function more(from) {",
    "      for (const i of list.slice(from, from + PAGE)) {",
    "        const failing = ['fail', 'crash', 'timeout', 'error', 'xpass']",
    "          .includes(outcomes[cases.outcome[i]]);",
    "        ul.append(el('li', null, renderCase(i, failing && opened++ < 1)));",
    "      }",
    "      if (list.length > from + PAGE) {",
    "        const button = el('button', 'more', 'Show ' + fmt(Math.min(PAGE, list.length -",
    "          from - PAGE)) + ' more of ' + fmt(list.length - from - PAGE));",
    "        button.type = 'button';",
    "        button.addEventListener('click', () => {",
    "          button.parentNode.remove();",
    "          more(from + PAGE);",
    "        });",
    "        ul.append(el('li', null, button));",
    "      }",
    "    }",
    "    more(0);",
    "    return panel;",
    "  }",
    "  // The outcomes of a cell other than pass, grouped by what they say: many cases of a cell",
    "  // fail for one reason, and a person wants the reasons before the cases. Addresses differ",
    "  // from case to case and would split a reason, so they are left out of the grouping.",
    "  function renderCauses(list) {",
    "    const byCause = new Map();",
    "    for (const i of list) {",
    "      const outcome = outcomes[cases.outcome[i]];",
    "      if (outcome === 'pass') continue;",
    "      const what = [expectedBecause(i), text[cases.rule[i]], text[cases.diagnostic[i]]]",
    "        .filter(Boolean).join(EM).replace(/0x[0-9a-f]{5,}/gi, '0x\\u2026');",
    "      const key = cases.outcome[i] + ' ' + what;",
    "      const cause = byCause.get(key) || {outcome, what, count: 0};",
    "      cause.count++;",
    "      byCause.set(key, cause);",
    "    }",
    "    const rank = (cause) => severityRank[outcomeIndex(cause.outcome)];",
    "    const causes = [...byCause.values()].sort((a, b) => rank(a) - rank(b) ||",
    "      b.count - a.count);",
    "    const box = el('div', 'causes');",
    "    if (!causes.length) return box;",
    "    const SHOWN = 10;",
    "    box.append(el('h4', null, 'By cause'));",
    "    const table = el('table', 'causes');",
    "    const body = el('tbody');",
    "    for (const cause of causes.slice(0, SHOWN)) {",
    "      const tr = el('tr');",
    "      tr.append(el('td', null, badge(cause.outcome, cause.count)),",
    "        el('td', 'what', clip(cause.what || '(no diagnostic)', 400)));",
    "      body.append(tr);",
    "    }",
    "    table.append(body);",
    "    box.append(table);",
    "    if (causes.length > SHOWN) {",
    "      box.append(el('p', 'note', 'and ' + (causes.length - SHOWN) + ' more causes, in the ' +",
    "        'cases below'));",
    "    }",
    "    return box;",
    "  }",
    "  // An expected failure says first why it is expected: the expectations file's reason.",
    "  function expectedBecause(i) {",
    "    const e = expectations.get(i);",
    "    return e ? 'expected: ' + text[e[2]] : '';",
    "  }",
    "  function renderCase(i, open) {",
    "    const outcome = outcomes[cases.outcome[i]];",
    "    const box = el('details', 'case');",
    "    box.dataset.id = caseId(i);",
    "    box.dataset.outcome = outcome;",
    "    const brief = [expectedBecause(i), text[cases.rule[i]], text[cases.diagnostic[i]]]",
    "      .filter(Boolean).join(EM);",
    "    const summary = el('summary', null, [badge(outcome), el('code', 'id', caseId(i)),",
    "      el('span', 'brief', clip(brief, 240))]);",
    "    box.append(summary);",
    "    let built = false;",
    "    const build = () => {",
    "      if (built) return;",
    "      built = true;",
    "      box.append(renderCaseBody(i));",
    "    };",
    "    // The body is built on the click that opens the case (before the browser opens it, so",
    "    // it is there at once), or on any other opening, such as find-in-page.",
    "    summary.addEventListener('click', build);",
    "    box.addEventListener('toggle', () => {",
    "      if (box.open) build();",
    "    });",
    "    if (open) {",
    "      build();",
    "      box.open = true;",
    "    }",
    "    return box;",
    "  }",
    "  function renderCaseBody(i) {",
    "    const body = el('div', 'casebody');",
    "    const kv = el('dl', 'kv');",
    "    const add = (name, value) => {",
    "      if (value === '' || value === null || value === undefined) return;",
    "      kv.append(el('dt', null, name), el('dd', null, value));",
    "    };",
    "    add('Rule', text[cases.rule[i]]);",
    "    if (text[cases.diagnostic[i]]) add('Diagnostic', longText(text[cases.diagnostic[i]]));",
    "    add('Request', text[cases.request[i]] ? el('code', null, text[cases.request[i]]) : '');",
    "    add('Export', text[cases.exported[i]] ? el('code', null, text[cases.exported[i]]) : '');",
    "    add('Duration', cases.ms[i] ? cases.ms[i] + ' ms' : 'under 0.1 ms');",
    "    const e = expectations.get(i);",
    "    if (e) {",
    "      const box = el('div', null, [el('code', null, text[e[1]]), ': ', text[e[2]],",
    "        ' (its outcome without the expectation: ' + (outcomes[e[4]] || '?') + ')']);",
    "      const link = text[e[3]];",
    "      if (/^https?:\\/\\//.test(link)) {",
    "        const a = el('a', null, link);",
    "        a.href = link;",
    "        a.rel = 'noopener noreferrer';",
    "        box.append(' ', a);",
    "      } else if (link) {",
    "        box.append(' ', link);",
    "      }",
    "      add('Expectation', box);",
    "    }",
    "    body.append(kv);",
    "    const table = el('table', 'checks');",
    "    const hr = el('tr');",
    "    for (const h of ['check', 'status', 'rule', 'note']) hr.append(el('th', null, h));",
    "    table.append(el('thead', null, hr));",
    "    const tbody = el('tbody');",
    "    const value = cases.checks[i];",
    "    const mask = Array.isArray(value) ? value[0] : value;",
    "    const rows = [];",
    "    data.checks.forEach((name, n) => {",
    "      if (n < 31 && (mask & (1 << n))) rows.push([n, 'pass', '', '']);",
    "    });",
    "    if (Array.isArray(value)) {",
    "      for (let j = 1; j + 3 < value.length; j += 4) {",
    "        rows.push([value[j], data.statuses[value[j + 1]], text[value[j + 2]],",
    "          text[value[j + 3]]]);",
    "      }",
    "    }",
    "    rows.sort((a, b) => a[0] - b[0]);",
    "    for (const [n, status, rule, note] of rows) {",
    "      const tr = el('tr');",
    "      tr.dataset.check = data.checks[n];",
    "      tr.append(el('td', 'mono', data.checks[n]),",
    "        el('td', 'st-' + status, (status === 'pass' ? CHECK : status === 'fail' ? CROSS :",
    "          DASH) + ' ' + status), el('td', 'mono', rule), el('td', 'note', note));",
    "      tbody.append(tr);",
    "    }",
    "    if (!rows.length) {",
    "      const tr = el('tr');",
    "      const td = el('td', 'note', 'No check ran: the case ended before the exchange.');",
    "      td.colSpan = 4;",
    "      tr.append(td);",
    "      tbody.append(tr);",
    "    }",
    "    table.append(tbody);",
    "    body.append(el('h4', null, 'Checks'), table);",
    "    return body;",
    "  }",
    "  function select(k) {",
    "    selected = k;",
    "    renderMatrices();",
    "    saveState();",
    "    const panel = document.getElementById('panel');",
    "    if (panel) {",
    "      panel.focus({preventScroll: true});",
    "      panel.scrollIntoView({block: 'nearest'});",
    "    }",
    "  }",
    "  // --- state in the address (a link keeps its filters)",
    "  function saveState() {",
    "    const params = new URLSearchParams();",
    "    for (const [key, , names] of FILTERS) {",
    "      if (filter[key] >= 0) params.set(key, names[filter[key]]);",
    "    }",
    "    if (filter.id) params.set('id', filter.id);",
    "    if (filter.all) params.set('all', '1');",
    "    if (selected >= 0) params.set('cell', String(selected));",
    "    const hash = params.toString();",
    "    history.replaceState(null, '', hash ? '#' + hash : location.pathname + location.search);",
    "  }",
    "  function loadState() {",
    "    const params = new URLSearchParams(location.hash.slice(1));",
    "    for (const [key, , names] of FILTERS) {",
    "      const index = params.has(key) ? names.indexOf(params.get(key)) : -1;",
    "      filter[key] = index;",
    "      if (selects[key]) selects[key].value = String(index);",
    "    }",
    "    filter.id = params.get('id') || '';",
    "    selects.id.value = filter.id;",
    "    filter.all = params.get('all') === '1';",
    "    selects.all.checked = filter.all;",
    "    const cell = Number(params.get('cell'));",
    "    selected = params.has('cell') && cell >= 0 && cell < ncells ? cell : -1;",
    "  }",
    "  // --- findings: one row per cause, above the matrices",
    "  function ruleLink(f) {",
    "    if (!f.rule_link || !/^(https?|file):/.test(f.rule_link)) return f.rule;",
    "    const a = el('a', null, f.rule);",
    "    a.href = f.rule_link;",
    "    return a;",
    "  }",
    "  function renderFindings() {",
    "    const list = head.findings || [];",
    "    const box = el('section', 'wrap findings');",
    "    box.id = 'findings';",
    "    if (!list.length) {",
    "      box.append(el('h2', null, 'Findings'), el('p', null, 'No case failed, crashed or timed "
    "out.'));",
    "      return box;",
    "    }",
    "    const bySeverity = {};",
    "    for (const f of list) bySeverity[f.severity] = (bySeverity[f.severity] || 0) + 1;",
    "    box.append(el('h2', null, 'Findings (' + list.length + '): ' +",
    "      Object.entries(bySeverity).map((e) => e[1] + ' ' + e[0]).join(DOT)));",
    "    box.append(el('p', 'muted', 'One entry per cause: the library at fault, the rule it ' +",
    "      'broke and the severity; open one for its cases, an example and a reproducer to paste ' "
    "+",
    "      'into the library\\'s tracker.'));",
    "    for (const f of list) {",
    "      const item = el('details', 'finding sev-' + f.severity);",
    "      item.id = 'finding-' + f.id;",
    "      const summary = el('summary', null, [",
    "        el('span', 'sev', f.severity),",
    "        el('span', 'count', String(f.count) + (f.count === 1 ? ' case' : ' cases')),",
    "        el('code', 'fid', f.id),",
    "        el('span', 'what', clip(f.diagnostic || '', 240)),",
    "      ]);",
    "      item.append(summary);",
    "      const rows = [",
    "        ['culprit', f.culprit + ' (the ' + f.side + ')'],",
    "        ['rule', ruleLink(f)], ['check', f.check], ['example', f.example],",
    "        ['cases', (f.cases || []).join(', ')],",
    "      ];",
    "      if (f.documented) rows.push(['documented', f.documented]);",
    "      if (f.reproducer_error) rows.push(['reproducer', 'none: ' + f.reproducer_error]);",
    "      item.append(facts(rows));",
    "      if (f.reproducer) {",
    "        item.append(el('h3', null, 'Reproducer'));",
    "        item.append(el('pre', 'repro', f.reproducer));",
    "      }",
    "      box.append(item);",
    "    }",
    "    return box;",
    "  }",
    "  function update() {",
    "    recount();",
    "    renderStatus();",
    "    renderMatrices();",
    "    saveState();",
    "  }",
    "  app.append(renderHeader(), renderEnvironments(), renderFindings(), renderFilters(),",
    "    renderLegend(),",
    "    matricesRoot);",
    "  const footer = el('footer', 'wrap', 'Written by interopcheck ' +",
    "    ((head.tool || {}).version || '?') + ' from the JSON report of the run. ' +",
    "    'Case ids, rules and diagnostics are those of the report.');",
    "  app.append(footer);",
    "  loadState();",
    "  recount();",
    "  renderStatus();",
    "  renderMatrices();",
    "  window.addEventListener('hashchange', () => {",
    "    loadState();",
    "    update();",
    "  });",
    "  document.documentElement.dataset.ready = '1';",
    "  const drawn = performance.now() - started;",
    "  document.documentElement.dataset.renderMs = String(Math.round(drawn));",
    "})();",
    NULL,
};

static void ic_html_put_lines(FILE *out, const char *const *lines)
{
    for (; *lines; lines++) {
        fputs(*lines, out);
        putc('\n', out);
    }
}

/* A fresh nonce for the page's Content-Security-Policy: 128 random bits in hex. */
static void ic_html_nonce(char out[33])
{
    unsigned char bytes[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && read(fd, bytes, sizeof(bytes)) == (ssize_t)sizeof(bytes);
    if (fd >= 0)
        close(fd);
    if (!ok) {
        /* No /dev/urandom: the nonce is then guessable in principle, but the data part is
         * escaped regardless; the policy is a second wall, not the first. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
        for (size_t i = 0; i < sizeof(bytes); i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            bytes[i] = (unsigned char)(seed >> 56);
        }
    }
    for (size_t i = 0; i < sizeof(bytes); i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

static int ic_html_put_page(FILE *out, const cJSON *report)
{
    char nonce[33];
    ic_html_nonce(nonce);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
          out);
    /* Nothing may be loaded from anywhere, and only this page's own script and style run. */
    fprintf(out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "script-src 'nonce-%s'; style-src 'nonce-%s'; img-src data:; base-uri 'none'; "
            "form-action 'none'\">\n",
            nonce, nonce);
    /* The script fills in the title: like every text of the report it goes in as text. */
    fputs("<title>interopcheck report</title>\n", out);
    fprintf(out, "<style nonce=\"%s\">\n", nonce);
    ic_html_put_lines(out, ic_html_style);
    fputs("</style>\n</head>\n<body>\n"
          "<noscript><p>This dashboard is drawn by JavaScript, which is turned off. The same "
          "data is in the JSON report next to this file.</p></noscript>\n"
          "<div id=\"app\" aria-live=\"polite\"></div>\n"
          "<script type=\"application/json\" id=\"ic-data\">",
          out);
    int rc = ic_html_put_data(out, report);
    fputs("</script>\n", out);
    fprintf(out, "<script nonce=\"%s\">\n", nonce);
    ic_html_put_lines(out, ic_html_script);
    fputs("</script>\n</body>\n</html>\n", out);
    return rc;
}

int ic_html_write(const cJSON *report, const char *path, char *err, size_t err_size)
{
    /* The page is built in memory (a few MB for the full matrix) and written in one go, so
     * that a failure midway leaves no file and a reader never sees half a page. */
    char *page = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&page, &size);
    if (!out) {
        snprintf(err, err_size, "out of memory while writing %s", path);
        return IC_ENOMEM;
    }
    int rc = ic_html_put_page(out, report);
    if (ferror(out) && rc == 0)
        rc = IC_ENOMEM;
    if (fclose(out) != 0 && rc == 0)
        rc = IC_ENOMEM;
    if (rc < 0)
        snprintf(err, err_size, "out of memory while writing %s", path);
    else
        rc = ic_text_write_atomic(path, page, size, err, err_size);
    free(page);
    return rc;
}
