#include "ic_report_html.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ic_cases.h"
#include "ic_catalog.h"
#include "ic_dtype.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_layout.h"
#include "ic_protocol.h"
#include "ic_result.h"
#include "ic_strtab.h"
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
 *
 * The writer's memory does not grow with the number of cases (196,000 for --all): it holds
 * the name and text tables and the cells, never the cases or the page. The cases come from a
 * case source (ic_cases.h), one at a time, and it reads them once, since every pass rebuilds
 * every case. That one pass writes each column, and the ids and expectations, into a
 * temporary file of its own; the files are then copied into the page, one after the other.
 * The page goes straight into the atomically written file, which a failure discards.
 * The page is the same as one written column by column: see struct ic_html_sink for how the
 * indices of the tables that several columns fill keep that order.
 */

/* --- Safe JSON output ------------------------------------------------------------------------ */

/* The characters written with JSON's short escapes; the others that need one get \u. */
static const char *const ic_html_short_escapes[0x80] = {
    ['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\t'] = "\\t"};

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
        if (ic_html_short_escapes[c])
            fputs(ic_html_short_escapes[c], out);
        else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&')
            fprintf(out, "\\u%04x", c);
        else
            putc(c, out);
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

/* The page's tables and columns hold millions of indices, which printf formats several times
 * slower than ic_text_decimal. */
static void ic_html_put_index(FILE *out, size_t value)
{
    char text[20];
    fwrite(text, 1, ic_text_decimal(text, value), out);
}

/* Reads back an index ic_html_put_index wrote, from a sink's private file (ic_html_copy):
 * false when no digit comes first or it overflows. The byte after it is left to read. */
static bool ic_html_read_index(FILE *in, size_t *ret)
{
    size_t value = 0;
    int ch, digits = 0;
    while ((ch = getc_unlocked(in)) >= '0' && ch <= '9') {
        if (value > (SIZE_MAX - 9) / 10)
            return false;
        value = value * 10 + (size_t)(ch - '0');
        digits++;
    }
    if (ch != EOF)
        ungetc(ch, in);
    *ret = value;
    return digits > 0;
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
        outcomes, checks, statuses, severities;
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
    X(statuses)                                                                                    \
    X(severities)

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
    cJSON_ArrayForEach(library, ic_json_get(environment, "libraries"))
    {
        const char *name = ic_json_string(library, "name");
        if (name)
            ic_strtab_intern(&d->libraries, name);
    }
}

/* Fills the name tables in their canonical order (the order of the filters and matrices);
 * names a report holds beyond these are added as they are met. Index 0 of environments,
 * severities, variants and text is "": no environment (a report that is not merged), no
 * severity (a case that did not fail), no variant, no text. */
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
    ic_strtab_intern(&d->severities, "");
    for (int i = 0; i < IC_CLASS_COUNT; i++)
        ic_strtab_intern(&d->severities, ic_severity_name((enum ic_severity_class)i));
    ic_strtab_intern(&d->variants, "");
    ic_strtab_intern(&d->text, "");

    const cJSON *environments = ic_json_get(report, "environments");
    const cJSON *entry;
    cJSON_ArrayForEach(entry, environments)
    {
        ic_intern_field(&d->environments, entry, "id");
        ic_html_seed_libraries(d, ic_json_get(entry, "environment"));
    }
    ic_html_seed_libraries(d, ic_json_get(report, "environment"));
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
    /* The key "protocol,producer,consumer,device,environment" of the indices, written by hand:
     * snprintf was most of this function, which runs for every case. */
    char key[5 * 21];
    size_t used = 0;
    const size_t parts[] = {cell.protocol, cell.producer, cell.consumer, cell.device,
                            cell.environment};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (i)
            key[used++] = ',';
        used += ic_text_decimal(key + used, parts[i]);
    }
    key[used] = '\0';
    size_t before = d->cell_keys.count;
    size_t index = ic_strtab_intern(&d->cell_keys, key);
    if (d->cell_keys.status || d->cell_keys.count == before)
        return index;
    struct ic_html_cell *cells =
        ic_grow(d->cells, &d->cells_capacity, index, sizeof(*cells), 256);
    if (!cells) {
        d->status = IC_ENOMEM;
        return 0;
    }
    d->cells = cells;
    d->cells[index] = cell;
    return index;
}

/* --- Case columns ---------------------------------------------------------------------------- */

/* The bytes that mark, in a sink's file, an index into the sink's own text or outcome table
 * (the index follows in decimal); ic_html_copy writes the page's index in its place. Nothing
 * else a sink writes (numbers, commas, brackets) holds these bytes. */
#define IC_HTML_TEXT_MARK    '\001'
#define IC_HTML_OUTCOME_MARK '\002'

/*
 * Where one column, or the ids, or the expectations, go during the pass over the cases: a
 * temporary file, copied into the page once the pass is over.
 *
 * A writer that went column by column would fill the tables column after column; reading case
 * by case, the order in which names are first met changes where two sinks fill the same table.
 * A table that only one sink fills during the pass (the cells and their names, dtypes, layouts,
 * variants, severities, checks, statuses) still gets its names in the same order, and the sink
 * fills it directly. The text table is filled by several columns, the ids and the expectations,
 * and the outcome table by the outcome column and the expectations: so each of these sinks keeps
 * its own table for them and writes its indices into it, marked. After the pass the sinks'
 * tables are added to the page's in column order, which gives each name the index a column by
 * column writer gave it (the page is the same), and the copy writes that index for the marked
 * one.
 */
struct ic_html_sink {
    struct ic_html_data *d;
    FILE *file;
    size_t entries;                 /* the ids or expectations written so far */
    struct ic_strtab text;          /* the sink's own text table */
    struct ic_strtab outcomes;      /* the sink's own outcome table (the expectations') */
    size_t *text_map, *outcome_map; /* after the pass: own index -> the page's index */
};

/* Each column writes one value per case. */
typedef void (*ic_html_column_fn)(struct ic_html_sink *s, const cJSON *c);

/* The index of the text `object[key]` ("" when it has none) in the sink's own text table. */
static size_t ic_html_text(struct ic_html_sink *s, const cJSON *object, const char *key)
{
    return ic_intern_field(&s->text, object, key);
}

/* Writes an index of the sink's own text table, marked. */
static void ic_html_put_text(struct ic_html_sink *s, size_t text)
{
    putc(IC_HTML_TEXT_MARK, s->file);
    ic_html_put_index(s->file, text);
}

static void ic_column_cell(struct ic_html_sink *s, const cJSON *c)
{
    ic_html_put_index(s->file, ic_html_cell_of(s->d, ic_json_string(c, "protocol"), c));
}

#define IC_NAME_COLUMN(field, table)                                                               \
    static void ic_column_##field(struct ic_html_sink *s, const cJSON *c)                          \
    {                                                                                              \
        ic_html_put_index(s->file, ic_intern_field(&s->d->table, c, #field));                      \
    }
IC_NAME_COLUMN(dtype, dtypes)
IC_NAME_COLUMN(layout, layouts)
IC_NAME_COLUMN(variant, variants)
IC_NAME_COLUMN(outcome, outcomes)
IC_NAME_COLUMN(severity, severities)
#undef IC_NAME_COLUMN

#define IC_TEXT_COLUMN(field)                                                                      \
    static void ic_column_##field(struct ic_html_sink *s, const cJSON *c)                          \
    {                                                                                              \
        ic_html_put_text(s, ic_html_text(s, c, #field));                                           \
    }
IC_TEXT_COLUMN(rule)
IC_TEXT_COLUMN(diagnostic)
IC_TEXT_COLUMN(request)
IC_TEXT_COLUMN(exported)
#undef IC_TEXT_COLUMN

/* Durations to a tenth of a millisecond: finer digits cost bytes and say nothing. Below 10^9
 * tenths the text is made here, digit by digit, as "%.10g" writes it (at most ten significant
 * digits, no trailing zero): printf's floating point, for each of 196 000 cases, was a tenth of
 * the dashboard's pass. */
static void ic_column_ms(struct ic_html_sink *s, const cJSON *c)
{
    const cJSON *ms = ic_json_get(c, "duration_ms");
    long long tenths = 0;
    if (cJSON_IsNumber(ms) && ms->valuedouble > 0 && ms->valuedouble < 1e12)
        tenths = (long long)(ms->valuedouble * 10 + 0.5);
    if (tenths >= 1000000000LL) {
        fprintf(s->file, "%.10g", (double)tenths / 10);
        return;
    }
    ic_html_put_index(s->file, (size_t)(tenths / 10));
    if (tenths % 10) {
        putc('.', s->file);
        putc((int)('0' + tenths % 10), s->file);
    }
}

/* The checks of a case: the mask of checks that passed without a note (bit i: check i of the
 * checks table), alone when that is all; otherwise an array of the mask followed by (check,
 * status, rule, note) index quadruples for the others. */
static void ic_column_checks(struct ic_html_sink *s, const cJSON *c)
{
    struct ic_html_data *d = s->d;
    FILE *out = s->file;
    const cJSON *check;
    unsigned long mask = 0;
    bool listed = false;
    cJSON_ArrayForEach(check, ic_json_get(c, "checks"))
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
        ic_html_put_index(out, mask);
        return;
    }
    putc('[', out);
    ic_html_put_index(out, mask);
    cJSON_ArrayForEach(check, ic_json_get(c, "checks"))
    {
        size_t name = ic_strtab_intern(&d->checks, check->string ? check->string : "");
        if (name < 31 && (mask & (1ul << name)))
            continue;
        /* The note's text is met before the rule's: the order this page's indices always had. */
        size_t note = ic_html_text(s, check, "note");
        size_t rule = ic_html_text(s, check, "rule");
        putc(',', out);
        ic_html_put_index(out, name);
        putc(',', out);
        ic_html_put_index(out, ic_intern_field(&d->statuses, check, "status"));
        putc(',', out);
        ic_html_put_text(s, rule);
        putc(',', out);
        ic_html_put_text(s, note);
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
    {"severity", ic_column_severity},
    {"rule", ic_column_rule},
    {"diagnostic", ic_column_diagnostic},
    {"request", ic_column_request},
    {"exported", ic_column_exported},
    {"ms", ic_column_ms},
    {"checks", ic_column_checks},
};

/* The sinks: one per column, in ic_case_columns' order, then the ids, then the expectations. */
#define IC_HTML_COLUMNS           (sizeof(ic_case_columns) / sizeof(ic_case_columns[0]))
#define IC_HTML_SINK_IDS          IC_HTML_COLUMNS
#define IC_HTML_SINK_EXPECTATIONS (IC_HTML_COLUMNS + 1)
#define IC_HTML_SINKS             (IC_HTML_COLUMNS + 2)

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

/* The ids the page cannot rebuild ([case, text index] pairs): case `i`'s, when it is one. */
static void ic_html_put_id(struct ic_html_sink *s, const cJSON *c, size_t i)
{
    if (ic_html_id_is_derived(c))
        return;
    fprintf(s->file, "%s[%zu,", s->entries++ ? "," : "", i);
    ic_html_put_text(s, ic_html_text(s, c, "id"));
    putc(']', s->file);
}

/* The expectations of cases that have one ([case, pattern, reason, link, observed outcome]):
 * case `i`'s, when it has one. */
static void ic_html_put_expectation(struct ic_html_sink *s, const cJSON *c, size_t i)
{
    const cJSON *e = ic_json_get(c, "expectation");
    if (!cJSON_IsObject(e))
        return;
    /* Their texts are met last first: the order this page's indices always had. */
    size_t link = ic_html_text(s, e, "link");
    size_t reason = ic_html_text(s, e, "reason");
    size_t pattern = ic_html_text(s, e, "pattern");
    fprintf(s->file, "%s[%zu,", s->entries++ ? "," : "", i);
    ic_html_put_text(s, pattern);
    putc(',', s->file);
    ic_html_put_text(s, reason);
    putc(',', s->file);
    ic_html_put_text(s, link);
    fprintf(s->file, ",%c%zu]", IC_HTML_OUTCOME_MARK, ic_intern_field(&s->outcomes, e, "observed"));
}

/* The cases of a page, as they are read: the tables and the sinks of the pass. Heap-allocated,
 * as each sink points at `d`. */
struct ic_html_collector {
    struct ic_html_data d;
    struct ic_html_sink sinks[IC_HTML_SINKS];
    size_t count;   /* the cases added */
    int temp_errno; /* why a temporary file could not be made or written */
};

/* What stopped a page, beyond what ic_text_write_atomic_with says itself. */
struct ic_html_job {
    const cJSON *report;
    struct ic_html_collector *cases;
    int temp_errno;    /* why a temporary file could not be made, written or read */
};

int ic_html_collector_new(const cJSON *report, struct ic_html_collector **ret)
{
    struct ic_html_collector *col = calloc(1, sizeof(*col));
    *ret = NULL;
    if (!col)
        return IC_ENOMEM;
    for (size_t k = 0; k < IC_HTML_SINKS; k++)
        col->sinks[k].d = &col->d;
    ic_html_seed(&col->d, report);
    for (size_t k = 0; k < IC_HTML_SINKS; k++) {
        errno = 0;
        col->sinks[k].file = ic_file_private(tmpfile());
        if (!col->sinks[k].file) {
            int failure = errno ? errno : EIO;
            ic_html_collector_free(col);
            errno = failure;
            return IC_EIO;
        }
    }
    *ret = col;
    return 0;
}

void ic_html_collector_add(struct ic_html_collector *col, const cJSON *c)
{
    for (size_t column = 0; column < IC_HTML_COLUMNS; column++) {
        if (col->count)
            putc(',', col->sinks[column].file);
        ic_case_columns[column].write(&col->sinks[column], c);
    }
    ic_html_put_id(&col->sinks[IC_HTML_SINK_IDS], c, col->count);
    ic_html_put_expectation(&col->sinks[IC_HTML_SINK_EXPECTATIONS], c, col->count);
    col->count++;
}

/* Every sink written through to its file: 0, or IC_EIO with the cause in `col`. */
static int ic_html_collector_flush(struct ic_html_collector *col)
{
    for (size_t k = 0; k < IC_HTML_SINKS; k++) {
        errno = 0;
        if (fflush(col->sinks[k].file) != 0 || ferror(col->sinks[k].file)) {
            col->temp_errno = errno ? errno : EIO;
            return IC_EIO;
        }
    }
    return 0;
}

/* The page's index of each name of a sink's own table `own`, added to the page's table `page`
 * in `own`'s order (see struct ic_html_sink); NULL when memory ran out. */
static size_t *ic_html_merge(struct ic_strtab *page, const struct ic_strtab *own)
{
    if (own->status)
        return NULL;
    size_t *map = malloc((own->count ? own->count : 1) * sizeof(*map));
    if (!map)
        return NULL;
    for (size_t i = 0; i < own->count; i++)
        map[i] = ic_strtab_intern(page, own->items[i]);
    return map;
}

void ic_html_collector_free(struct ic_html_collector *col)
{
    if (!col)
        return;
    for (size_t k = 0; k < IC_HTML_SINKS; k++) {
        if (col->sinks[k].file)
            fclose(col->sinks[k].file);
        ic_strtab_release(&col->sinks[k].text);
        ic_strtab_release(&col->sinks[k].outcomes);
        free(col->sinks[k].text_map);
        free(col->sinks[k].outcome_map);
    }
#define IC_HTML_RELEASE(name) ic_strtab_release(&col->d.name);
    IC_HTML_TABLES(IC_HTML_RELEASE)
    IC_HTML_RELEASE(text)
    IC_HTML_RELEASE(cell_keys)
#undef IC_HTML_RELEASE
    free(col->d.cells);
    free(col);
}

/* Copies a sink's file into the page, with the page's index in place of each marked one, a
 * byte at a time through getc_unlocked and putc_unlocked (the page is megabytes, 10 MB for
 * --all): both files are this thread's own, opened private (ic_file_private), so there is no
 * lock to take. Returns 0 or IC_EIO (with the cause in `job`). */
static int ic_html_copy(FILE *out, const struct ic_html_sink *s, struct ic_html_job *job)
{
    int ch;
    errno = 0;
    rewind(s->file);
    while ((ch = getc_unlocked(s->file)) != EOF) {
        if (ch != IC_HTML_TEXT_MARK && ch != IC_HTML_OUTCOME_MARK) {
            putc_unlocked(ch, out);
            continue;
        }
        bool text = ch == IC_HTML_TEXT_MARK;
        size_t index;
        if (!ic_html_read_index(s->file, &index) ||
            index >= (text ? s->text.count : s->outcomes.count)) {
            job->temp_errno = errno ? errno : EIO;
            return IC_EIO;
        }
        ic_html_put_index(out, (text ? s->text_map : s->outcome_map)[index]);
    }
    if (ferror(s->file)) {
        job->temp_errno = errno ? errno : EIO;
        return IC_EIO;
    }
    return 0;
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
            if (i)
                putc(',', out);
            ic_html_put_index(out, values[f]);
        }
        putc(']', out);
    }
    putc('}', out);
}

/* The outcome table (ic_result.h), row i for outcome i, which is also index i of the page's
 * "outcomes" name table: the page takes marks, labels, colours and order from here. */
static void ic_html_put_outcome_facts(FILE *out)
{
    fputs(",\"outcome_facts\":[", out);
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        const struct ic_outcome_info *info = ic_outcome_info((enum ic_outcome)o);
        fprintf(out, "%s{\"name\":", o ? "," : "");
        ic_html_put_string(out, info->name, IC_TEXT_FIELD_CAP);
        fputs(",\"category\":", out);
        ic_html_put_string(out, info->category, IC_TEXT_FIELD_CAP);
        fputs(",\"mark\":", out);
        ic_html_put_string(out, info->mark, IC_TEXT_FIELD_CAP);
        fputs(",\"label\":", out);
        ic_html_put_string(out, info->label, IC_TEXT_FIELD_CAP);
        fprintf(out, ",\"rank\":%d,\"passed\":%s,\"failing\":%s}", info->rank,
                info->passed ? "true" : "false", info->failing ? "true" : "false");
    }
    putc(']', out);
}

/* Writes the data object, reading the cases in one pass. Returns 0, IC_ENOMEM, or IC_EIO (with
 * the cause in `job`); the output is then incomplete. */
/* The page's data: the report's head, the collected cases' columns (their sinks' tables
 * joined to the page's), the cells and the tables. Returns 0, IC_ENOMEM or IC_EIO. */
static int ic_html_put_data(FILE *out, struct ic_html_job *job)
{
    const cJSON *report = job->report;
    struct ic_html_collector *col = job->cases;
    struct ic_html_data *d = &col->d;
    struct ic_html_sink *sinks = col->sinks;

    fputs("{\"format\":1,\"head\":{", out);
    static const char *const head[] = {"tool", "run", "environment", "environments", "findings"};
    bool first = true;
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
        const cJSON *item = ic_json_get(report, head[i]);
        if (!item)
            continue;
        fprintf(out, "%s\"%s\":", first ? "" : ",", head[i]);
        ic_html_put_value(out, item, IC_TEXT_FIELD_CAP);
        first = false;
    }

    int rc = 0;
    /* The sinks' own tables join the page's in column order: see struct ic_html_sink. */
    for (size_t k = 0; k < IC_HTML_SINKS && !rc; k++) {
        sinks[k].text_map = ic_html_merge(&d->text, &sinks[k].text);
        sinks[k].outcome_map = ic_html_merge(&d->outcomes, &sinks[k].outcomes);
        if (!sinks[k].text_map || !sinks[k].outcome_map)
            rc = IC_ENOMEM;
    }
    if (!rc) {
        fputs("},\"cases\":{", out);
        for (size_t column = 0; column < IC_HTML_COLUMNS && !rc; column++) {
            fprintf(out, "%s\"%s\":[", column ? "," : "", ic_case_columns[column].name);
            rc = ic_html_copy(out, &sinks[column], job);
            putc(']', out);
        }
        putc('}', out);
    }
    if (!rc) {
        fputs(",\"ids\":[", out);
        rc = ic_html_copy(out, &sinks[IC_HTML_SINK_IDS], job);
    }
    if (!rc) {
        fputs("],\"expectations\":[", out);
        rc = ic_html_copy(out, &sinks[IC_HTML_SINK_EXPECTATIONS], job);
        putc(']', out);
    }
    if (rc)
        return rc;

    /* Gaps become cells too, with their reason: the page shows them in the matrix. */
    const cJSON *summary = ic_json_get(report, "summary");
    const cJSON *protocol;
    cJSON_ArrayForEach(protocol, ic_json_get(summary, "protocols"))
    {
        const cJSON *gap;
        cJSON_ArrayForEach(gap, ic_json_get(protocol, "gaps"))
        {
            size_t cell = ic_html_cell_of(d, protocol->string, gap);
            const char *reason = ic_json_string(gap, "reason");
            if (!d->status && !d->cell_keys.status)
                d->cells[cell].gap_reason =
                    ic_strtab_intern(&d->text, reason && reason[0] ? reason : "no reason given");
        }
    }
    ic_html_put_cells(out, d);

#define IC_HTML_PUT_TABLE(name) ic_html_put_table(out, #name, &d->name);
    IC_HTML_TABLES(IC_HTML_PUT_TABLE)
#undef IC_HTML_PUT_TABLE
    ic_html_put_table(out, "text", &d->text);
    ic_html_put_outcome_facts(out);
    putc('}', out);

    rc = d->status;
#define IC_HTML_STATUS(name)                                                                       \
    if (!rc)                                                                                       \
        rc = d->name.status;
    IC_HTML_TABLES(IC_HTML_STATUS)
    IC_HTML_STATUS(text)
    IC_HTML_STATUS(cell_keys)
#undef IC_HTML_STATUS
    return rc;
}

/* --- The page -------------------------------------------------------------------------------- */

/* The page is three files of this folder, embedded at build time (src/meson.build):
 * dashboard.html, whose markers @NONCE@, @STYLE@, @DATA@ and @SCRIPT@ are filled in here,
 * dashboard.css and dashboard.js. Neither the style nor the script holds text of the report:
 * that reaches the page only through the data element, and the script puts it into the page
 * with textContent. */
extern const unsigned char ic_dashboard_html[], ic_dashboard_css[], ic_dashboard_js[];
extern const size_t ic_dashboard_html_size, ic_dashboard_css_size, ic_dashboard_js_size;

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

/* Writes the page (an ic_text_writer_fn). Returns 0, IC_ENOMEM or IC_EIO. */
static int ic_html_put_page(FILE *out, void *context)
{
    struct ic_html_job *job = context;
    char nonce[33];
    const char *page = (const char *)ic_dashboard_html;
    const char *end = page + ic_dashboard_html_size;
    int rc = 0;
    ic_html_nonce(nonce);
    /* The policy lets nothing load from anywhere, and only this page's own script and style
     * (by the nonce) run; the script fills in the title, as text like every text of the
     * report. */
    while (page < end && !rc) {
        const char *marker = memchr(page, '@', (size_t)(end - page));
        if (!marker) {
            fwrite(page, 1, (size_t)(end - page), out);
            break;
        }
        fwrite(page, 1, (size_t)(marker - page), out);
        size_t left = (size_t)(end - marker);
        if (left >= 7 && memcmp(marker, "@NONCE@", 7) == 0) {
            fputs(nonce, out);
            page = marker + 7;
        } else if (left >= 7 && memcmp(marker, "@STYLE@", 7) == 0) {
            fwrite(ic_dashboard_css, 1, ic_dashboard_css_size, out);
            page = marker + 7;
        } else if (left >= 6 && memcmp(marker, "@DATA@", 6) == 0) {
            rc = ic_html_put_data(out, job);
            page = marker + 6;
        } else if (left >= 8 && memcmp(marker, "@SCRIPT@", 8) == 0) {
            fwrite(ic_dashboard_js, 1, ic_dashboard_js_size, out);
            page = marker + 8;
        } else {
            putc('@', out);
            page = marker + 1;
        }
    }
    if (!rc && ferror(out))
        rc = IC_EIO;
    return rc;
}

int ic_html_write_collected(const cJSON *report, struct ic_html_collector *cases, const char *path,
                            char *err, size_t err_size)
{
    /* Straight into the temporary file that replaces `path` once it is whole: a failure midway
     * leaves no file, and a reader never sees half a page. */
    struct ic_html_job job = {.report = report, .cases = cases};
    int rc = ic_html_collector_flush(cases);
    if (rc == 0)
        rc = ic_text_write_atomic_with(path, ic_html_put_page, &job, err, err_size);
    else
        job.temp_errno = cases->temp_errno;
    if (rc < 0 && job.temp_errno) {
        snprintf(err, err_size, "cannot write %s: a temporary file failed: %s", path,
                 strerror(job.temp_errno));
        rc = IC_EIO;
    }
    return rc;
}

int ic_html_write(const cJSON *report, struct ic_cases *cases, const char *path, char *err,
                  size_t err_size)
{
    struct ic_html_collector *col;
    int rc = ic_html_collector_new(report, &col);
    if (rc < 0) {
        if (rc == IC_ENOMEM)
            snprintf(err, err_size, "out of memory while writing %s", path);
        else
            snprintf(err, err_size, "cannot write %s: a temporary file failed: %s", path,
                     strerror(errno));
        return rc;
    }
    const cJSON *c;
    if (cases) {
        ic_cases_for_each(c, cases)
        {
            ic_html_collector_add(col, c);
        }
        rc = ic_cases_status(cases);
    }
    if (rc < 0)
        snprintf(err, err_size, "cannot write %s: its cases could not be read (%s)", path,
                 ic_strerror(rc));
    else
        rc = ic_html_write_collected(report, col, path, err, err_size);
    ic_html_collector_free(col);
    return rc;
}
