#include "ic_findings.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_case.h"
#include "ic_config.h"
#include "ic_paths.h"
#include "ic_dtype.h"
#include "ic_error.h"
#include "ic_json.h"
#include "ic_layout.h"
#include "ic_result.h"
#include "ic_rules.h"
#include "ic_text.h"

#define IC_SIGNATURE_MAX 240
#define IC_PARTS         7 /* protocol, producer, consumer, device, dtype, layout, variant */

/* --- Signatures ----------------------------------------------------------------------------- */

static bool ic_word_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

static bool ic_is_number(const char *word, size_t len)
{
    if (len > 2 && word[0] == '0' && word[1] == 'x') {
        for (size_t i = 2; i < len; i++) {
            if (!isxdigit((unsigned char)word[i]))
                return false;
        }
        return true;
    }
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)word[i]))
            return false;
    }
    return len > 0;
}

/* Whether the word is `name` (the case's producer or consumer): the first character decides
 * most comparisons, and this runs for every word of every failure's note, three times a
 * failing case in a run's report. */
static bool ic_word_is(const char *word, size_t len, const char *name)
{
    return name && name[0] == word[0] && strncmp(word, name, len) == 0 && name[len] == '\0';
}

/* The dtype and layout names with their lengths, dtypes first, made once for every thread:
 * each word of each failure's note is looked up here. */
static struct ic_placeholder_name {
    const char *name;
    size_t len;
    char kind; /* 'T' for a dtype, 'L' for a layout */
} ic_placeholder_names[(IC_DTYPE_END - IC_DTYPE_FIRST) + IC_LAYOUT_COUNT];
static size_t ic_placeholder_count;
static pthread_once_t ic_placeholder_once = PTHREAD_ONCE_INIT;

static void ic_placeholder_add(const char *name, char kind)
{
    if (name && name[0])
        ic_placeholder_names[ic_placeholder_count++] =
            (struct ic_placeholder_name){name, strlen(name), kind};
}

static void ic_placeholder_names_make(void)
{
    for (int d = IC_DTYPE_FIRST; d < IC_DTYPE_END; d++)
        ic_placeholder_add(ic_dtype_name((enum ic_dtype)d), 'T');
    for (int l = 0; l < IC_LAYOUT_COUNT; l++)
        ic_placeholder_add(ic_layout_name((enum ic_layout)l), 'L');
}

static bool ic_is_dtype_or_layout(const char *word, size_t len, char *kind)
{
    pthread_once(&ic_placeholder_once, ic_placeholder_names_make);
    for (size_t i = 0; i < ic_placeholder_count; i++) {
        const struct ic_placeholder_name *n = &ic_placeholder_names[i];
        if (n->len == len && n->name[0] == word[0] && memcmp(n->name, word, len) == 0) {
            *kind = n->kind;
            return true;
        }
    }
    return false;
}

struct ic_out {
    char *buf;
    size_t size, used;
};

static void ic_put(struct ic_out *out, char ch)
{
    if (out->used + 1 < out->size)
        out->buf[out->used++] = ch;
}

/* A word of the note: a placeholder for what varies, the word itself otherwise (with its digit
 * runs as '#', so "sm_75" and "sm_80" read the same). */
static void ic_put_word(struct ic_out *out, const char *word, size_t len, const char *producer,
                        const char *consumer)
{
    char kind;
    /* A name followed by '.' is a module path ("numpy.ndarray"), not the library's part. */
    bool path = word[len] == '.' && ic_word_char(word[len + 1]);
    if (ic_is_number(word, len)) {
        ic_put(out, '#');
    } else if (!path && (ic_word_is(word, len, producer) || ic_word_is(word, len, consumer))) {
        /* One placeholder for both: the finding's culprit and side already say who. */
        ic_put(out, '@');
    } else if (len > 6 && strncmp(word, "PyBUF_", 6) == 0) {
        /* The request varies with the consumer; the fault does not. */
        ic_put(out, 'R');
    } else if (ic_is_dtype_or_layout(word, len, &kind)) {
        ic_put(out, kind);
    } else {
        for (size_t i = 0; i < len; i++) {
            bool digit = isdigit((unsigned char)word[i]);
            if (!digit)
                ic_put(out, word[i]);
            else if (i == 0 || !isdigit((unsigned char)word[i - 1]))
                ic_put(out, '#');
        }
    }
}

/* Whether the word from `word` to `after` is "an" before a dtype or layout name: the article
 * goes with the name ("an int8", "a uint8"), and both read "a" where the name reads as its
 * placeholder, so that an int4 and a uint4 case of one fault make one finding. */
static bool ic_article_of_placeholder(const char *word, const char *after, const char *end)
{
    if (after - word != 2 || strncmp(word, "an", 2) != 0 || after >= end || *after != ' ')
        return false;
    const char *next = after + 1, *stop = next;
    while (stop < end && ic_word_char(*stop))
        stop++;
    char kind;
    return stop > next && ic_is_dtype_or_layout(next, (size_t)(stop - next), &kind);
}

void ic_findings_signature(const char *note, const char *producer, const char *consumer,
                           char *out_buf, size_t size)
{
    struct ic_out out = {out_buf, size, 0};
    const char *end = strstr(note, "; ");
    if (!end)
        end = note + strlen(note);
    for (const char *p = note; p < end;) {
        if (*p == '"') {
            /* A quoted value (a format, a capsule name) varies with the case. */
            const char *close = memchr(p + 1, '"', (size_t)(end - p - 1));
            ic_put(&out, '"');
            ic_put(&out, '"');
            p = close ? close + 1 : end;
        } else if (ic_word_char(*p)) {
            const char *start = p;
            while (p < end && ic_word_char(*p))
                p++;
            if (ic_article_of_placeholder(start, p, end))
                ic_put(&out, 'a');
            else
                ic_put_word(&out, start, (size_t)(p - start), producer, consumer);
        } else {
            ic_put(&out, *p++);
        }
    }
    if (size > 0)
        out_buf[out.used < size ? out.used : size - 1] = '\0';
    /* Shapes and strides of any rank read the same: "(#, #, #)" and "[#,#]" become "(#)", "[#]";
     * and "R | R" (a combined request) reads as one request. */
    static const char *const runs[][2] = {
        {"#, #", "#"}, {"#,#", "#"}, {"-#", "#"}, {"#,)", "#)"}, {"R | R", "R"}};
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        char *at;
        size_t from = strlen(runs[r][0]), to = strlen(runs[r][1]);
        while ((at = strstr(out_buf, runs[r][0])) != NULL) {
            memmove(at + to, at + from, strlen(at + from) + 1);
            memcpy(at, runs[r][1], to);
        }
    }
    if (size > 0)
        ic_utf8_repair_in_place(out_buf, size); /* the cut above may split a character */
}

static uint32_t ic_fnv1a(const char *text)
{
    uint32_t hash = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        hash ^= *p;
        hash *= 16777619u;
    }
    return hash;
}

/* --- The cases of a report ------------------------------------------------------------------ */

/* Each case's id split into parts, each part as an index into its dimension's values. */
struct ic_universe {
    size_t count;
    int (*parts)[IC_PARTS];
    unsigned char *open; /* no verdict (unsupported, error): a pattern may cover it */
    char **values[IC_PARTS];
    int nvalues[IC_PARTS], capvalues[IC_PARTS];
    /* The cases with a verdict (not open), the only ones that can make a pattern too wide,
     * indexed two ways by ic_universe_index. By value: value v of part d is held by
     * cases[d][start[d][v]] up to cases[d][start[d][v + 1]]. In order: `sorted` lists them by
     * their parts, compared part by part, so the cases of a pattern that fixes its first k
     * parts are one run of it. A pattern's cases are among those of any part it fixes, and
     * among those of its fixed prefix, so a check of a pattern reads the fewest. The case
     * indexes are 32-bit: these lists are the findings' largest memory. */
    size_t nverdicts;
    uint32_t *sorted;
    size_t *start[IC_PARTS];
    uint32_t *cases[IC_PARTS];
};

static int ic_value_index(struct ic_universe *u, int dim, const char *text, size_t len)
{
    for (int i = 0; i < u->nvalues[dim]; i++) {
        if (strlen(u->values[dim][i]) == len && strncmp(u->values[dim][i], text, len) == 0)
            return i;
    }
    if (u->nvalues[dim] == u->capvalues[dim]) {
        int cap = u->capvalues[dim] ? 2 * u->capvalues[dim] : 16;
        char **grown = realloc(u->values[dim], (size_t)cap * sizeof(*grown));
        if (!grown)
            return IC_ENOMEM;
        u->values[dim] = grown;
        u->capvalues[dim] = cap;
    }
    char *copy = strndup(text, len);
    if (!copy)
        return IC_ENOMEM;
    u->values[dim][u->nvalues[dim]] = copy;
    return u->nvalues[dim]++;
}

/* Splits an id into the 7 part indexes; a missing variant is the value "". */
static int ic_universe_add(struct ic_universe *u, size_t index, const char *id)
{
    const char *p = id;
    for (int dim = 0; dim < IC_PARTS; dim++) {
        const char *dot = dim < IC_PARTS - 1 ? strchr(p, '.') : NULL;
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (dim < IC_PARTS - 2 && !dot)
            return IC_EINVAL;
        if (dim == IC_PARTS - 2 && !dot) { /* no variant */
            int v = ic_value_index(u, dim, p, len);
            int none = v < 0 ? v : ic_value_index(u, dim + 1, "", 0);
            if (none < 0)
                return IC_ENOMEM;
            u->parts[index][dim] = v;
            u->parts[index][dim + 1] = none;
            return 0;
        }
        int v = ic_value_index(u, dim, p, len);
        if (v < 0)
            return v;
        u->parts[index][dim] = v;
        p = dot ? dot + 1 : p + len;
    }
    return 0;
}

static const struct ic_universe *ic_sorting; /* qsort has no context argument */

static int ic_case_order(const void *a, const void *b)
{
    const int *x = ic_sorting->parts[*(const uint32_t *)a];
    const int *y = ic_sorting->parts[*(const uint32_t *)b];
    for (int d = 0; d < IC_PARTS; d++) {
        if (x[d] != y[d])
            return x[d] < y[d] ? -1 : 1;
    }
    return 0;
}

/* Indexes the cases with a verdict, once every case was added. IC_ENOMEM. */
static int ic_universe_index(struct ic_universe *u)
{
    u->sorted = malloc((u->count ? u->count : 1) * sizeof(*u->sorted));
    if (!u->sorted)
        return IC_ENOMEM;
    for (size_t i = 0; i < u->count; i++) {
        if (!u->open[i])
            u->sorted[u->nverdicts++] = (uint32_t)i;
    }
    for (int dim = 0; dim < IC_PARTS; dim++) {
        size_t *start = calloc((size_t)u->nvalues[dim] + 1, sizeof(*start));
        uint32_t *cases = malloc((u->nverdicts ? u->nverdicts : 1) * sizeof(*cases));
        u->start[dim] = start;
        u->cases[dim] = cases;
        if (!start || !cases)
            return IC_ENOMEM;
        for (size_t k = 0; k < u->nverdicts; k++)
            start[u->parts[u->sorted[k]][dim] + 1]++;
        for (int v = 0; v < u->nvalues[dim]; v++)
            start[v + 1] += start[v];
        for (size_t k = 0; k < u->nverdicts; k++) { /* then start[v] is v's end, shifted back */
            uint32_t i = u->sorted[k];
            cases[start[u->parts[i][dim]]++] = i;
        }
        for (int v = u->nvalues[dim]; v > 0; v--)
            start[v] = start[v - 1];
        start[0] = 0;
    }
    ic_sorting = u;
    if (u->nverdicts > 1)
        qsort(u->sorted, u->nverdicts, sizeof(*u->sorted), ic_case_order);
    ic_sorting = NULL;
    return 0;
}

static void ic_universe_release(struct ic_universe *u)
{
    for (int dim = 0; dim < IC_PARTS; dim++) {
        for (int i = 0; i < u->nvalues[dim]; i++)
            free(u->values[dim][i]);
        free(u->values[dim]);
        free(u->start[dim]);
        free(u->cases[dim]);
    }
    free(u->sorted);
    free(u->parts);
    free(u->open);
    memset(u, 0, sizeof(*u));
}

/* --- Groups --------------------------------------------------------------------------------- */

struct ic_group {
    char culprit[2 * IC_NAME_MAX + 2];
    char rule[64];
    char severity[24];
    char side[16];
    char check[24];
    char signature[IC_SIGNATURE_MAX];
    char id[IC_FINDING_ID_MAX];
    uint32_t hash;
    int rank; /* severity class, for ordering */

    size_t *cases; /* universe indexes, each once */
    size_t count, cap;
    size_t outcomes[IC_OUTCOME_COUNT];
    size_t example;
    int example_score;
    /* Copies: a case source frees each case when it reads the next (ic_cases.h). */
    char *example_id;
    char *example_note;
    char *documented;
    cJSON *example_case; /* a copy of the whole case, when the caller asks for it */
};

struct ic_groups {
    struct ic_group *items;
    size_t count, cap;
    bool keep_examples; /* each group keeps a copy of its example case (example_case) */
};

static struct ic_group *ic_group_find(struct ic_groups *groups, const struct ic_group *key)
{
    for (size_t i = 0; i < groups->count; i++) {
        struct ic_group *g = &groups->items[i];
        if (g->hash == key->hash && strcmp(g->culprit, key->culprit) == 0 &&
            strcmp(g->rule, key->rule) == 0 && strcmp(g->severity, key->severity) == 0 &&
            strcmp(g->signature, key->signature) == 0)
            return g;
    }
    struct ic_group *grown =
        ic_grow(groups->items, &groups->cap, groups->count, sizeof(*grown), 32);
    if (!grown)
        return NULL;
    groups->items = grown;
    struct ic_group *g = &groups->items[groups->count++];
    *g = *key;
    g->cases = NULL;
    g->count = g->cap = 0;
    memset(g->outcomes, 0, sizeof(g->outcomes));
    g->example_score = -1;
    g->example_id = g->example_note = g->documented = NULL;
    g->example_case = NULL;
    return g;
}

/* How good a case is as the example a maintainer reproduces: the plainest request, layout and
 * dtype first. */
static int ic_example_score(const cJSON *c)
{
    static const char *const layouts[] = {
        "contiguous", "flat",       "strided",       "offset",         "reversed",
        "fortran",    "transposed", "unit_dims",     "broadcast",      "scalar",
        "empty",      "ndim32",     "unit_dims_odd", "broadcast_inner"};
    static const char *const dtypes[] = {"float32", "int32", "float64", "int64",
                                         "int16",   "uint8", "int8"};
    int score = 0;
    const char *variant = ic_json_string(c, "variant");
    const char *producer = ic_json_string_or(c, "producer", "");
    const char *consumer = ic_json_string_or(c, "consumer", "");
    /* The fewer and the better known the libraries, the easier the reproducer is to run. */
    if (strcmp(producer, consumer) == 0)
        score += 300;
    else if (strcmp(producer, "numpy") == 0 || strcmp(consumer, "numpy") == 0)
        score += 200;
    else if (strcmp(producer, "torch") == 0 || strcmp(consumer, "torch") == 0)
        score += 100;
    const char *layout = ic_json_string_or(c, "layout", "");
    const char *dtype = ic_json_string_or(c, "dtype", "");
    if (!variant)
        score += 1000;
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        if (strcmp(layout, layouts[i]) == 0)
            score += 100 - 5 * (int)i;
    }
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        if (strcmp(dtype, dtypes[i]) == 0)
            score += 20 - (int)i;
    }
    return score;
}

static int ic_group_add(struct ic_group *g, size_t index, const cJSON *c, const char *note,
                        enum ic_outcome observed, const char *documented, bool keep_example)
{
    if (g->count && g->cases[g->count - 1] == index)
        return 0; /* one failure per case and finding */
    size_t *grown = ic_grow(g->cases, &g->cap, g->count, sizeof(*grown), 16);
    if (!grown)
        return IC_ENOMEM;
    g->cases = grown;
    g->cases[g->count++] = index;
    g->outcomes[observed]++;
    int score = ic_example_score(c);
    if (score > g->example_score) {
        char *id = strdup(ic_json_string_or(c, "id", ""));
        char *copy = strdup(note ? note : "");
        cJSON *whole = keep_example ? cJSON_Duplicate(c, true) : NULL;
        if (!id || !copy || (keep_example && !whole)) {
            free(id);
            free(copy);
            cJSON_Delete(whole);
            return IC_ENOMEM;
        }
        free(g->example_id);
        free(g->example_note);
        cJSON_Delete(g->example_case);
        g->example_case = whole;
        g->example_score = score;
        g->example = index;
        g->example_id = id;
        g->example_note = copy;
    }
    if (documented && !g->documented && !(g->documented = strdup(documented)))
        return IC_ENOMEM;
    return 0;
}

/* The outcome a case was observed as: its own, or for xfail its expectation's. */
static bool ic_observed_failure(const cJSON *c, enum ic_outcome *ret)
{
    const char *outcome = ic_json_string(c, "outcome");
    const cJSON *expectation = ic_json_get(c, "expectation");
    const char *observed = ic_json_string(expectation, "observed");
    if (outcome && (strcmp(outcome, "xfail") == 0 || strcmp(outcome, "waived") == 0) && observed)
        outcome = observed;
    return outcome && ic_outcome_from_name(outcome, ret) == 0 && ic_outcome_is_failure(*ret);
}

static void ic_culprit_of(const cJSON *c, const char *side, char *buf, size_t size)
{
    const char *producer = ic_json_string_or(c, "producer", "?");
    const char *consumer = ic_json_string_or(c, "consumer", "?");
    if (side && strcmp(side, "producer") == 0)
        snprintf(buf, size, "%s", producer);
    else if (side && strcmp(side, "consumer") == 0)
        snprintf(buf, size, "%s", consumer);
    else if (strcmp(producer, consumer) == 0)
        snprintf(buf, size, "%s", producer);
    else
        snprintf(buf, size, "%s+%s", producer, consumer);
}

/* The group a failure belongs to: its culprit, rule, severity and signature, and the id they
 * make. */
static void ic_failure_key(const cJSON *c, const cJSON *failure, const char *check,
                           const char *note, struct ic_group *key)
{
    memset(key, 0, sizeof(*key));
    const char *side = ic_json_string(failure, "side");
    ic_culprit_of(c, side, key->culprit, sizeof(key->culprit));
    snprintf(key->rule, sizeof(key->rule), "%s", ic_json_string_or(failure, "rule", "unknown"));
    snprintf(key->severity, sizeof(key->severity), "%s",
             ic_json_string_or(failure, "severity", "harmful"));
    snprintf(key->side, sizeof(key->side), "%s", side ? side : "both");
    snprintf(key->check, sizeof(key->check), "%s", check);
    enum ic_severity_class rank = IC_CLASS_HARMFUL;
    ic_severity_from_name(key->severity, &rank);
    key->rank = (int)rank;
    char signature[IC_SIGNATURE_MAX];
    ic_findings_signature(note ? note : "", ic_json_string_or(c, "producer", ""),
                          ic_json_string_or(c, "consumer", ""), signature, sizeof(signature));
    snprintf(key->signature, sizeof(key->signature), "%s: %s", check, signature);
    /* a long library message is cut mid-character here: the signature goes into JSON */
    ic_utf8_repair_in_place(key->signature, sizeof(key->signature));
    char text[2 * IC_SIGNATURE_MAX];
    snprintf(text, sizeof(text), "%s|%s|%s|%s", key->culprit, key->rule, key->severity,
             key->signature);
    key->hash = ic_fnv1a(text);
    snprintf(key->id, sizeof(key->id), "%s.%s.%06x", key->culprit, key->rule,
             (unsigned)(key->hash & 0xffffff));
}

/* A case's primary failure: for a crash or a timeout the case itself; for a fail the failed
 * check that carries the case's rule (the check that gave the case its rule), or, in a report
 * written by hand where no check carries it, the case's diagnostic. */
struct ic_primary {
    const cJSON *failure;
    const char *check;
    const char *note;
};

static struct ic_primary ic_primary_failure(const cJSON *c, enum ic_outcome observed)
{
    if (observed != IC_OUTCOME_FAIL)
        return (struct ic_primary){c, ic_outcome_name(observed), ic_json_string(c, "diagnostic")};
    const char *rule = ic_json_string(c, "rule");
    const cJSON *check;
    cJSON_ArrayForEach(check, ic_json_get(c, "checks"))
    {
        const char *check_rule = ic_json_string(check, "rule");
        if (strcmp(ic_json_string_or(check, "status", ""), "fail") != 0 || !rule || !check_rule ||
            strcmp(rule, check_rule) != 0)
            continue;
        return (struct ic_primary){check, check->string, ic_json_string(check, "note")};
    }
    return (struct ic_primary){c, "case", ic_json_string(c, "diagnostic")};
}

/* Adds a case to the finding of its primary failure; the other failed checks stay in the
 * case for the reader. */
static int ic_collect_case(struct ic_groups *groups, size_t index, const cJSON *c,
                           enum ic_outcome observed)
{
    struct ic_primary primary = ic_primary_failure(c, observed);
    struct ic_group key;
    ic_failure_key(c, primary.failure, primary.check, primary.note, &key);
    struct ic_group *g = ic_group_find(groups, &key);
    if (!g)
        return IC_ENOMEM;
    return ic_group_add(g, index, c, primary.note, observed, ic_json_string(c, "documented"),
                        groups->keep_examples);
}

int ic_findings_case_finding(const cJSON *c, char *id, size_t size)
{
    enum ic_outcome observed;
    if (size)
        id[0] = '\0';
    if (!ic_observed_failure(c, &observed))
        return 0;
    struct ic_primary primary = ic_primary_failure(c, observed);
    struct ic_group key;
    ic_failure_key(c, primary.failure, primary.check, primary.note, &key);
    snprintf(id, size, "%s", key.id);
    return 1;
}

/* --- Patterns ------------------------------------------------------------------------------- */

static bool ic_matches(const int *pattern, const int *parts)
{
    for (int d = 0; d < IC_PARTS; d++) {
        if (pattern[d] >= 0 && pattern[d] != parts[d])
            return false;
    }
    return true;
}

/* Compares a case's first `len` parts with a pattern's (all fixed). */
static int ic_prefix_compare(const int *parts, const int *pattern, int len)
{
    for (int d = 0; d < len; d++) {
        if (parts[d] != pattern[d])
            return parts[d] < pattern[d] ? -1 : 1;
    }
    return 0;
}

/* The run of u->sorted whose cases match the pattern's fixed prefix (its first parts up to
 * the first open one): [*lo, *hi). */
static void ic_prefix_run(const struct ic_universe *u, const int *pattern, size_t *lo, size_t *hi)
{
    int len = 0;
    while (len < IC_PARTS && pattern[len] >= 0)
        len++;
    size_t a = 0, b = u->nverdicts;
    while (a < b) { /* the first case not before the prefix */
        size_t mid = a + (b - a) / 2;
        if (ic_prefix_compare(u->parts[u->sorted[mid]], pattern, len) < 0)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    b = u->nverdicts;
    while (a < b) { /* the first case after it */
        size_t mid = a + (b - a) / 2;
        if (ic_prefix_compare(u->parts[u->sorted[mid]], pattern, len) <= 0)
            a = mid + 1;
        else
            b = mid;
    }
    *hi = a;
}

/* True when every case of the report that `pattern` matches is in `member`, or has no
 * verdict (unsupported, error: an expectation leaves those alone anyway). Reads the cases
 * with a verdict of the pattern's fixed prefix, or of its rarest fixed value if fewer. */
static bool ic_pattern_exact(const struct ic_universe *u, const unsigned char *member,
                             const int *pattern)
{
    size_t lo, hi;
    ic_prefix_run(u, pattern, &lo, &hi);
    const uint32_t *list = u->sorted + lo;
    size_t fewest = hi - lo;
    for (int d = 0; d < IC_PARTS; d++) {
        if (pattern[d] < 0)
            continue;
        size_t held = u->start[d][pattern[d] + 1] - u->start[d][pattern[d]];
        if (held < fewest) {
            fewest = held;
            list = u->cases[d] + u->start[d][pattern[d]];
        }
    }
    for (size_t k = 0; k < fewest; k++) {
        if (!member[list[k]] && ic_matches(pattern, u->parts[list[k]]))
            return false;
    }
    return true;
}

/* Widens patterns part by part while they stay exact. `rejected` (room for `count`
 * patterns) remembers the candidates already found too wide in this dimension. */
static size_t ic_widen(const struct ic_universe *u, const unsigned char *member,
                       int (*patterns)[IC_PARTS], size_t count, int (*rejected)[IC_PARTS])
{
    static const int order[] = {4, 5, 6, 3, 2, 1, 0}; /* dtype, layout, variant, device, ... */
    for (int round = 0; round < 2; round++) {
        for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
            int dim = order[o];
            size_t nrejected = 0;
            for (size_t i = 0; i < count; i++) {
                if (patterns[i][dim] < 0)
                    continue;
                int candidate[IC_PARTS];
                memcpy(candidate, patterns[i], sizeof(candidate));
                candidate[dim] = -1;
                bool known = false;
                for (size_t r = 0; r < nrejected && !known; r++)
                    known = memcmp(rejected[r], candidate, sizeof(candidate)) == 0;
                if (known)
                    continue;
                if (!ic_pattern_exact(u, member, candidate)) {
                    memcpy(rejected[nrejected++], candidate, sizeof(candidate));
                    continue;
                }
                /* Replace every pattern the candidate covers by the candidate. */
                size_t kept = 0;
                for (size_t j = 0; j < count; j++) {
                    if (j != i && ic_matches(candidate, patterns[j]))
                        continue;
                    if (j != kept)
                        memcpy(patterns[kept], patterns[j], sizeof(patterns[0]));
                    if (j == i)
                        memcpy(patterns[kept], candidate, sizeof(candidate));
                    kept++;
                }
                count = kept;
                i = (size_t)-1; /* start the dimension over: indexes moved */
            }
        }
    }
    return count;
}

static void ic_pattern_text(const struct ic_universe *u, const int *pattern, char *buf, size_t size)
{
    size_t used = 0;
    for (int d = 0; d < IC_PARTS - 1; d++)
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", d ? "." : "",
                                 pattern[d] < 0 ? "*" : u->values[d][pattern[d]]);
    int v = pattern[IC_PARTS - 1];
    if (v < 0)
        snprintf(buf + used, used < size ? size - used : 0, ".**");
    else if (u->values[IC_PARTS - 1][v][0])
        snprintf(buf + used, used < size ? size - used : 0, ".%s", u->values[IC_PARTS - 1][v]);
}

static cJSON *ic_group_patterns(const struct ic_universe *u, const struct ic_group *g)
{
    unsigned char *member = calloc(u->count ? u->count : 1, 1);
    int(*patterns)[IC_PARTS] = calloc(g->count ? g->count : 1, sizeof(*patterns));
    int(*rejected)[IC_PARTS] = calloc(g->count ? g->count : 1, sizeof(*rejected));
    cJSON *list = cJSON_CreateArray();
    if (!member || !patterns || !rejected || !list)
        goto fail;
    size_t count = 0;
    for (size_t i = 0; i < g->count; i++) {
        if (member[g->cases[i]])
            continue; /* the same id in two environments */
        member[g->cases[i]] = 1;
        memcpy(patterns[count++], u->parts[g->cases[i]], sizeof(patterns[0]));
    }
    /* Merged reports repeat ids: a pattern that matches one environment's case of an id
     * matches the others too, so membership is by id. Only cases with a verdict are read
     * when patterns are checked, so only those need the mark: the run of the sorted ones
     * that hold the id's parts. Widening starts from the ids in report order, as its greedy
     * steps depend on the order. */
    for (size_t i = 0; i < count; i++) {
        size_t lo, hi;
        ic_prefix_run(u, patterns[i], &lo, &hi);
        for (size_t k = lo; k < hi; k++)
            member[u->sorted[k]] = member[u->sorted[k]] ? member[u->sorted[k]] : 2;
    }
    count = ic_widen(u, member, patterns, count, rejected);
    for (size_t i = 0; i < count; i++) {
        char text[IC_CASE_ID_MAX + 8];
        ic_pattern_text(u, patterns[i], text, sizeof(text));
        cJSON *item = cJSON_CreateString(text);
        if (!item || !cJSON_AddItemToArray(list, item)) {
            cJSON_Delete(item);
            goto fail;
        }
    }
    free(member);
    free(patterns);
    free(rejected);
    return list;
fail:
    free(member);
    free(patterns);
    free(rejected);
    cJSON_Delete(list);
    return NULL;
}

/* --- The report ----------------------------------------------------------------------------- */

static int ic_group_order(const void *a, const void *b)
{
    const struct ic_group *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->id, y->id);
}

static bool ic_add_string(cJSON *object, const char *key, const char *value)
{
    return value && cJSON_AddStringToObject(object, key, value) != NULL;
}

/* Where the rules document explains the rule: <rules URL>#<anchor> (ic_paths.h). */
static bool ic_add_rule_link(cJSON *f, const char *rule_id)
{
    enum ic_rule rule;
    char anchor[96], link[PATH_MAX + 128];
    if (ic_rule_from_id(rule_id, &rule) < 0)
        return true; /* a rule this build does not know (a hand-made report): no link */
    ic_rule_anchor(rule, anchor, sizeof(anchor));
    snprintf(link, sizeof(link), "%s#%s", ic_paths_rules_url(), anchor);
    return cJSON_AddStringToObject(f, "rule_link", link) != NULL;
}

static cJSON *ic_group_json(const struct ic_universe *u, const struct ic_group *g,
                            const cJSON *previous)
{
    cJSON *f = cJSON_CreateObject();
    if (!f)
        return NULL;
    const char *example = g->example_id;
    bool ok = ic_add_string(f, "id", g->id) && ic_add_string(f, "severity", g->severity) &&
              ic_add_string(f, "culprit", g->culprit) && ic_add_string(f, "side", g->side) &&
              ic_add_string(f, "rule", g->rule) && ic_add_rule_link(f, g->rule) &&
              ic_add_string(f, "check", g->check) && ic_add_string(f, "signature", g->signature) &&
              cJSON_AddNumberToObject(f, "count", (double)g->count) &&
              ic_add_string(f, "example", example ? example : "") &&
              ic_add_string(f, "diagnostic", g->example_note ? g->example_note : "");
    if (ok && g->documented)
        ok = ic_add_string(f, "documented", g->documented);
    cJSON *outcomes = ok ? cJSON_AddObjectToObject(f, "outcomes") : NULL;
    for (int o = 0; outcomes && o < IC_OUTCOME_COUNT; o++) {
        if (g->outcomes[o] &&
            !cJSON_AddNumberToObject(outcomes, ic_outcome_name(o), (double)g->outcomes[o]))
            outcomes = NULL;
    }
    cJSON *patterns = outcomes ? ic_group_patterns(u, g) : NULL;
    if (!patterns || !cJSON_AddItemToObject(f, "cases", patterns)) {
        cJSON_Delete(patterns);
        cJSON_Delete(f);
        return NULL;
    }
    const cJSON *old = previous ? ic_findings_find(previous, g->id) : NULL;
    const cJSON *script = ic_json_get(old, "reproducer");
    if (cJSON_IsString(script) &&
        !cJSON_AddItemToObject(f, "reproducer", cJSON_Duplicate(script, true))) {
        cJSON_Delete(f);
        return NULL;
    }
    return f;
}

const cJSON *ic_findings_find(const cJSON *report, const char *id)
{
    const cJSON *findings = ic_json_get(report, "findings");
    const cJSON *f;
    cJSON_ArrayForEach(f, findings)
    {
        const char *fid = ic_json_string(f, "id");
        if (fid && id && strcmp(fid, id) == 0)
            return f;
    }
    return NULL;
}

static void ic_groups_release(struct ic_groups *groups)
{
    for (size_t i = 0; i < groups->count; i++) {
        free(groups->items[i].cases);
        free(groups->items[i].example_id);
        free(groups->items[i].example_note);
        free(groups->items[i].documented);
        cJSON_Delete(groups->items[i].example_case);
    }
    free(groups->items);
    memset(groups, 0, sizeof(*groups));
}

/* The findings of cases as they are read: the universe of their ids and the groups of the
 * failing ones. */
struct ic_findings_collector {
    struct ic_universe u;
    struct ic_groups groups;
    size_t added;
    int status; /* 0, or the first failure (IC_E*) */
};

int ic_findings_collector_new(size_t ncases, bool keep_examples, struct ic_findings_collector **ret)
{
    *ret = NULL;
    if (ncases > UINT32_MAX)
        return IC_ERANGE;
    struct ic_findings_collector *col = calloc(1, sizeof(*col));
    if (!col)
        return IC_ENOMEM;
    col->groups.keep_examples = keep_examples;
    col->u.count = ncases;
    col->u.parts = calloc(ncases ? ncases : 1, sizeof(*col->u.parts));
    col->u.open = calloc(ncases ? ncases : 1, 1);
    if (!col->u.parts || !col->u.open) {
        ic_findings_collector_free(col);
        return IC_ENOMEM;
    }
    *ret = col;
    return 0;
}

void ic_findings_collector_add(struct ic_findings_collector *col, const cJSON *c)
{
    if (col->status < 0)
        return;
    size_t index = col->added++;
    const char *id = ic_json_string(c, "id");
    if (index >= col->u.count || !id || ic_universe_add(&col->u, index, id) < 0) {
        col->status = IC_EINVAL;
        return;
    }
    enum ic_outcome observed;
    const char *outcome = ic_json_string_or(c, "outcome", "");
    col->u.open[index] = strcmp(outcome, "unsupported") == 0 || strcmp(outcome, "error") == 0;
    if (ic_observed_failure(c, &observed)) {
        int rc = ic_collect_case(&col->groups, index, c, observed);
        if (rc < 0)
            col->status = rc;
    }
}

void ic_findings_collector_free(struct ic_findings_collector *col)
{
    if (!col)
        return;
    ic_groups_release(&col->groups);
    ic_universe_release(&col->u);
    free(col);
}

int ic_findings_label(cJSON *cases)
{
    cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        char id[IC_FINDING_ID_MAX];
        cJSON_DeleteItemFromObjectCaseSensitive(c, "finding");
        if (ic_findings_case_finding(c, id, sizeof(id)) > 0 &&
            !cJSON_AddStringToObject(c, "finding", id))
            return IC_ENOMEM;
    }
    return 0;
}

int ic_findings_collector_attach(struct ic_findings_collector *col, cJSON *report,
                                 cJSON **ret_examples)
{
    struct ic_universe *u = &col->u;
    struct ic_groups *groups = &col->groups;
    cJSON *findings = NULL, *examples = NULL;
    cJSON *previous = NULL;

    if (ret_examples)
        *ret_examples = NULL;
    int rc = col->status;
    if (rc == 0 && col->added != u->count)
        rc = IC_EINVAL;
    if (rc == 0)
        rc = ic_universe_index(u);
    if (rc < 0)
        return rc;
    /* qsort's array may not be NULL, even for no elements: a report without failures has none */
    if (groups->count > 1)
        qsort(groups->items, groups->count, sizeof(groups->items[0]), ic_group_order);
    /* Reproducers of the report's earlier findings (a merge's inputs) carry over by id. */
    previous = cJSON_DetachItemFromObjectCaseSensitive(report, "findings");
    cJSON *holder = previous ? cJSON_CreateObject() : NULL;
    if (previous && (!holder || !cJSON_AddItemToObject(holder, "findings", previous))) {
        cJSON_Delete(previous); /* their reproducers are made again instead of carried over */
        cJSON_Delete(holder);
        holder = NULL;
    }
    findings = cJSON_CreateArray();
    rc = findings ? 0 : IC_ENOMEM;
    for (size_t i = 0; i < groups->count && rc == 0; i++) {
        cJSON *f = ic_group_json(u, &groups->items[i], holder);
        if (!f || !cJSON_AddItemToArray(findings, f)) {
            cJSON_Delete(f);
            rc = IC_ENOMEM;
        }
    }
    cJSON_Delete(holder);
    /* The examples, in the findings' order: each group's copy moves into the array. */
    examples = ret_examples && rc == 0 ? cJSON_CreateArray() : NULL;
    if (ret_examples && rc == 0 && !examples)
        rc = IC_ENOMEM;
    for (size_t i = 0; examples && i < groups->count && rc == 0; i++) {
        if (!cJSON_AddItemToArray(examples, groups->items[i].example_case))
            rc = IC_ENOMEM;
        else
            groups->items[i].example_case = NULL;
    }
    if (rc == 0 && !cJSON_AddItemToObject(report, "findings", findings))
        rc = IC_ENOMEM;
    if (rc == 0) {
        findings = NULL;
        if (ret_examples)
            *ret_examples = examples;
        examples = NULL;
    }
    cJSON_Delete(findings);
    cJSON_Delete(examples);
    return rc;
}

int ic_findings_attach(cJSON *report, struct ic_cases *cases, cJSON **ret_examples)
{
    struct ic_findings_collector *col;
    if (ret_examples)
        *ret_examples = NULL;
    int rc = ic_findings_collector_new(cases->count, ret_examples != NULL, &col);
    if (rc < 0)
        return rc;
    const cJSON *c;
    ic_cases_for_each(c, cases)
    {
        ic_findings_collector_add(col, c);
    }
    rc = ic_cases_status(cases);
    if (rc == 0)
        rc = ic_findings_collector_attach(col, report, ret_examples);
    ic_findings_collector_free(col);
    return rc;
}

int ic_findings_attach_report(cJSON *report)
{
    cJSON *cases = ic_json_get(report, "cases");
    if (!cJSON_IsArray(cases))
        return IC_EINVAL;
    int rc = ic_findings_label(cases);
    if (rc < 0)
        return rc;
    struct ic_cases_array source;
    ic_cases_of_array(&source, cases);
    return ic_findings_attach(report, &source.base, NULL);
}
