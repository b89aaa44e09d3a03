#include "ic_expect.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_report.h"
#include "ic_result.h"
#include "ic_text.h"

/* A case id has 6 parts, or 7 with a variant (ic_case.h); a pattern without '**' that has
 * another number of parts could never match, which is how a prefix written as a pattern
 * ("dlpack.torch") is caught. */
#define IC_ID_PARTS_MIN    6
#define IC_ID_PARTS_MAX    7
/* More parts than any id has, so splitting never truncates a pattern that can match. */
#define IC_MATCH_PARTS_MAX 16

struct ic_expect_entry {
    char *pattern;
    char *reason;
    char *link;       /* NULL without a link */
    const char *file; /* points into ic_expectations.files */
    long line;
};

struct ic_expectations {
    struct ic_expect_entry *entries;
    size_t count, capacity;
    char **files; /* the paths as given, one copy each */
    int nfiles;
};

/* --- Matching ------------------------------------------------------------------------------- */

struct ic_part {
    const char *text;
    size_t len;
};

/* One part of a pattern against one part of an id: '*' is any run of characters (none
 * included), '?' exactly one. The classic backtracking over the last '*' is linear enough for
 * parts of a few dozen characters. Inside a part "**" behaves as '*'. */
static bool ic_match_part(const struct ic_part *pattern, const struct ic_part *id)
{
    size_t p = 0, s = 0, star = SIZE_MAX, star_s = 0;
    while (s < id->len) {
        if (p < pattern->len && (pattern->text[p] == '?' || pattern->text[p] == id->text[s])) {
            p++;
            s++;
        } else if (p < pattern->len && pattern->text[p] == '*') {
            star = p++;
            star_s = s;
        } else if (star != SIZE_MAX) {
            p = star + 1;
            s = ++star_s;
        } else {
            return false;
        }
    }
    while (p < pattern->len && pattern->text[p] == '*')
        p++;
    return p == pattern->len;
}

static bool ic_part_is_globstar(const struct ic_part *part)
{
    return part->len == 2 && part->text[0] == '*' && part->text[1] == '*';
}

/* Splits at '.'; returns the number of parts, or -1 when there are more than `max`. Runs of
 * '**' parts collapse into one, as they match the same ids, so the matcher's recursion stays
 * shallow whatever the pattern. */
static int ic_split_parts(const char *text, struct ic_part *parts, int max)
{
    int n = 0;
    for (const char *start = text;;) {
        const char *dot = strchr(start, '.');
        struct ic_part part = {start, dot ? (size_t)(dot - start) : strlen(start)};
        if (!(n > 0 && ic_part_is_globstar(&part) && ic_part_is_globstar(&parts[n - 1]))) {
            if (n == max)
                return -1;
            parts[n++] = part;
        }
        if (!dot)
            return n;
        start = dot + 1;
    }
}

/* '**' matches any run of whole parts, none included: "dlpack.**.float32.*" matches every
 * DLPack case of float32 whatever its libraries and device. */
static bool ic_match_parts(const struct ic_part *pattern, int npattern, const struct ic_part *id,
                           int nid)
{
    if (npattern == 0)
        return nid == 0;
    if (ic_part_is_globstar(&pattern[0])) {
        for (int skip = 0; skip <= nid; skip++) {
            if (ic_match_parts(pattern + 1, npattern - 1, id + skip, nid - skip))
                return true;
        }
        return false;
    }
    return nid > 0 && ic_match_part(&pattern[0], &id[0]) &&
           ic_match_parts(pattern + 1, npattern - 1, id + 1, nid - 1);
}

bool ic_expect_match(const char *pattern, const char *id)
{
    struct ic_part pattern_parts[IC_MATCH_PARTS_MAX], id_parts[IC_MATCH_PARTS_MAX];
    int npattern = ic_split_parts(pattern, pattern_parts, IC_MATCH_PARTS_MAX);
    int nid = ic_split_parts(id, id_parts, IC_MATCH_PARTS_MAX);
    if (npattern < 0 || nid < 0)
        return false;
    return ic_match_parts(pattern_parts, npattern, id_parts, nid);
}

/* --- Parsing -------------------------------------------------------------------------------- */

/* Says what is wrong with a pattern, or returns NULL for a good one. */
static const char *ic_pattern_problem(const char *pattern, char *buf, size_t size)
{
    int parts = 0, fixed = 0;
    bool globstar = false;
    for (const char *start = pattern;;) {
        const char *end = strchr(start, '.');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        if (len == 0) {
            snprintf(buf, size, "'%s' has an empty part: parts are joined by single dots", pattern);
            return buf;
        }
        for (size_t i = 0; i < len; i++) {
            unsigned char ch = (unsigned char)start[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '*' ||
                  ch == '?')) {
                snprintf(buf, size,
                         "'%s': '%c' cannot be in a pattern (case ids are lower-case [a-z0-9_] "
                         "parts joined by '.'; wildcards are *, ? and **)",
                         pattern, ch >= 0x20 && ch < 0x7f ? ch : '?');
                return buf;
            }
        }
        bool is_globstar = len == 2 && start[0] == '*' && start[1] == '*';
        if (!is_globstar && memmem(start, len, "**", 2)) {
            snprintf(buf, size,
                     "'%s': '**' must be a whole part (it matches whole parts); use '*' within "
                     "a part",
                     pattern);
            return buf;
        }
        parts++;
        if (is_globstar)
            globstar = true;
        else
            fixed++;
        if (!end)
            break;
        start = end + 1;
    }
    if ((!globstar && (fixed < IC_ID_PARTS_MIN || fixed > IC_ID_PARTS_MAX)) ||
        (globstar && fixed > IC_ID_PARTS_MAX)) {
        snprintf(buf, size,
                 "'%s' has %d parts, but a case id has %d or %d "
                 "(protocol.producer.consumer.device.dtype.layout[.variant]) and patterns match "
                 "whole ids, never prefixes: use '**' for any run of parts",
                 pattern, parts, IC_ID_PARTS_MIN, IC_ID_PARTS_MAX);
        return buf;
    }
    return NULL;
}

static bool ic_is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static bool ic_is_link(const char *word, size_t len)
{
    return (len > 7 && strncmp(word, "http://", 7) == 0) ||
           (len > 8 && strncmp(word, "https://", 8) == 0);
}

static int ic_expect_add(struct ic_expectations *set, const char *pattern, size_t pattern_len,
                         const char *reason, size_t reason_len, const char *link, size_t link_len,
                         const char *file, long line)
{
    struct ic_expect_entry *entries =
        ic_grow(set->entries, &set->capacity, set->count, sizeof(*entries), 32);
    if (!entries)
        return IC_ENOMEM;
    set->entries = entries;
    struct ic_expect_entry *entry = &set->entries[set->count];
    entry->pattern = strndup(pattern, pattern_len);
    entry->reason = strndup(reason, reason_len);
    entry->link = link ? strndup(link, link_len) : NULL;
    entry->file = file;
    entry->line = line;
    if (!entry->pattern || !entry->reason || (link && !entry->link)) {
        free(entry->pattern);
        free(entry->reason);
        free(entry->link);
        return IC_ENOMEM;
    }
    set->count++;
    return 0;
}

/* The column (from 1, in characters) of byte `offset` of a line. */
static size_t ic_column(const char *line, size_t offset)
{
    size_t number, column;
    ic_text_line_column(line, offset, offset, &number, &column);
    return column;
}

/* The text of a line is what the file says, or the line is refused: a NUL byte (a binary file,
 * or UTF-16), bytes that are not UTF-8 (reasons and links go into JSON reports) and control
 * characters (they would reach terminals and views) all name the line and column. */
static int ic_expect_check_text(const char *line, size_t len, const char *file, long number,
                                char *err, size_t err_size)
{
    const char *nul = memchr(line, '\0', len);
    if (nul) {
        snprintf(err, err_size,
                 "%s:%ld: a NUL byte at column %zu: an expectations file is UTF-8 text (was it "
                 "saved as UTF-16?)",
                 file, number, ic_column(line, (size_t)(nul - line)));
        return IC_EINVAL;
    }
    size_t valid = ic_utf8_valid_prefix(line, len);
    if (valid < len) {
        snprintf(err, err_size,
                 "%s:%ld: the byte 0x%02x at column %zu is not valid UTF-8: an expectations file "
                 "is UTF-8 text",
                 file, number, (unsigned)(unsigned char)line[valid], ic_column(line, valid));
        return IC_EINVAL;
    }
    for (size_t i = 0; i < len;) {
        unsigned char ch = (unsigned char)line[i];
        /* DEL, and the C1 controls U+0080..U+009F (C2 80..C2 9F in UTF-8). */
        bool c1 = ch == 0xC2 && i + 1 < len && (unsigned char)line[i + 1] <= 0x9F;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7F || c1) {
            snprintf(err, err_size, "%s:%ld: a control character (U+%04X) at column %zu", file,
                     number, c1 ? (unsigned)(unsigned char)line[i + 1] : (unsigned)ch,
                     ic_column(line, i));
            return IC_EINVAL;
        }
        i++;
    }
    return 0;
}

/* One line of a file, `len` bytes: "PATTERN REASON... [LINK]", or a blank or comment line.
 * `line` may be modified (the comment is cut off). */
static int ic_expect_parse_line(struct ic_expectations *set, char *line, size_t len,
                                const char *file, long number, char *err, size_t err_size)
{
    char problem[600];
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    /* A byte order mark that an editor put at the start of the file is not text. */
    if (number == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        memmove(line, line + 3, len - 3 + 1);
        len -= 3;
    }
    int rc = ic_expect_check_text(line, len, file, number, err, err_size);
    if (rc < 0)
        return rc;
    /* '#' starts a comment where it starts a word, so that a link keeps its #fragment. */
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '#' && (i == 0 || ic_is_blank(line[i - 1]))) {
            line[i] = '\0';
            len = i;
            break;
        }
    }
    while (len && ic_is_blank(line[len - 1]))
        line[--len] = '\0';
    const char *p = line;
    while (ic_is_blank(*p))
        p++;
    if (!*p)
        return 0;

    const char *pattern = p;
    while (*p && !ic_is_blank(*p))
        p++;
    size_t pattern_len = (size_t)(p - pattern);
    char pattern_copy[512];
    if (pattern_len >= sizeof(pattern_copy)) {
        snprintf(err, err_size, "%s:%ld: the pattern is longer than %zu characters", file, number,
                 sizeof(pattern_copy) - 1);
        return IC_EINVAL;
    }
    memcpy(pattern_copy, pattern, pattern_len);
    pattern_copy[pattern_len] = '\0';
    if (ic_pattern_problem(pattern_copy, problem, sizeof(problem))) {
        snprintf(err, err_size, "%s:%ld: %s", file, number, problem);
        return IC_EINVAL;
    }
    while (ic_is_blank(*p))
        p++;
    const char *reason = p;
    const char *end = line + len;

    /* The last word is the link when it looks like one. */
    const char *last = end;
    while (last > reason && !ic_is_blank(last[-1]))
        last--;
    const char *link = NULL;
    size_t link_len = 0;
    if (last < end && ic_is_link(last, (size_t)(end - last))) {
        link = last;
        link_len = (size_t)(end - last);
        end = last;
        while (end > reason && ic_is_blank(end[-1]))
            end--;
    }
    if (end == reason) {
        snprintf(err, err_size,
                 "%s:%ld: '%s' needs a reason after the pattern (PATTERN REASON... [LINK])", file,
                 number, pattern_copy);
        return IC_EINVAL;
    }
    rc = ic_expect_add(set, pattern_copy, pattern_len, reason, (size_t)(end - reason), link,
                       link_len, file, number);
    if (rc < 0)
        snprintf(err, err_size, "%s:%ld: out of memory", file, number);
    return rc;
}

static int ic_expect_parse_file(struct ic_expectations *set, const char *path, char *err,
                                size_t err_size)
{
    FILE *file = ic_report_open(path, "r", "the expectations file ", err, err_size);
    if (!file)
        return IC_EIO;
    char *line = NULL;
    size_t capacity = 0;
    long number = 0;
    int rc = 0;
    errno = 0;
    ssize_t got;
    while ((got = getline(&line, &capacity, file)) >= 0) {
        number++;
        /* The length getline read, not strlen: a NUL byte must not hide the rest of a line. */
        rc = ic_expect_parse_line(set, line, (size_t)got, path, number, err, err_size);
        if (rc < 0)
            break;
    }
    if (rc == 0 && ferror(file)) {
        snprintf(err, err_size, "cannot read the expectations file %s: %s", path, strerror(errno));
        rc = IC_EIO;
    }
    free(line);
    fclose(file);
    return rc;
}

void ic_expect_free(struct ic_expectations *expectations)
{
    if (!expectations)
        return;
    for (size_t i = 0; i < expectations->count; i++) {
        free(expectations->entries[i].pattern);
        free(expectations->entries[i].reason);
        free(expectations->entries[i].link);
    }
    for (int i = 0; i < expectations->nfiles; i++)
        free(expectations->files[i]);
    free(expectations->files);
    free(expectations->entries);
    free(expectations);
}

int ic_expect_load(const char *const *paths, int npaths, struct ic_expectations **ret, char *err,
                   size_t err_size)
{
    struct ic_expectations *set = calloc(1, sizeof(*set));
    if (!set || (npaths > 0 && !(set->files = calloc((size_t)npaths, sizeof(char *))))) {
        snprintf(err, err_size, "out of memory while reading expectations");
        ic_expect_free(set);
        return IC_ENOMEM;
    }
    for (int i = 0; i < npaths; i++) {
        set->files[i] = strdup(paths[i]);
        if (!set->files[i]) {
            snprintf(err, err_size, "out of memory while reading expectations");
            ic_expect_free(set);
            return IC_ENOMEM;
        }
        set->nfiles++;
        int rc = ic_expect_parse_file(set, set->files[i], err, err_size);
        if (rc < 0) {
            ic_expect_free(set);
            return rc;
        }
    }
    *ret = set;
    return 0;
}

/* --- Applying ------------------------------------------------------------------------------- */

static cJSON *ic_expectation_json(const struct ic_expect_entry *entry, const char *observed)
{
    cJSON *json = cJSON_CreateObject();
    if (!json || !cJSON_AddStringToObject(json, "pattern", entry->pattern) ||
        !cJSON_AddStringToObject(json, "reason", entry->reason) ||
        !(entry->link ? cJSON_AddStringToObject(json, "link", entry->link)
                      : cJSON_AddNullToObject(json, "link")) ||
        !cJSON_AddStringToObject(json, "observed", observed)) {
        cJSON_Delete(json);
        return NULL;
    }
    return json;
}

/* Turns one case into xfail or xpass. Everything is allocated before the case is touched, so
 * a case is either changed completely or not at all. */
static int ic_expect_mark(cJSON *c, const struct ic_expect_entry *entry, const char *observed,
                          enum ic_outcome outcome)
{
    cJSON *expectation = ic_expectation_json(entry, observed);
    cJSON *name = cJSON_CreateString(ic_outcome_name(outcome));
    if (!expectation || !name) {
        cJSON_Delete(expectation);
        cJSON_Delete(name);
        return IC_ENOMEM;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(c, "outcome", name);
    if (ic_json_get(c, "expectation"))
        cJSON_ReplaceItemInObjectCaseSensitive(c, "expectation", expectation);
    else if (!cJSON_AddItemToObject(c, "expectation", expectation)) {
        cJSON_Delete(expectation);
        return IC_ENOMEM;
    }
    return 0;
}

void ic_expect_list_unmatched(const struct ic_expectations *set, const bool *matched, char *out,
                              size_t size)
{
    size_t used = 0;
    if (!out || size == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < set->count; i++) {
        if (matched[i])
            continue;
        const struct ic_expect_entry *entry = &set->entries[i];
        int n = snprintf(out + used, size - used, "%s:%ld: %s\n", entry->file, entry->line,
                         entry->pattern);
        if (n < 0 || (size_t)n >= size - used) {
            out[used] = '\0'; /* whole lines only: a cut line would name the wrong pattern */
            return;
        }
        used += (size_t)n;
    }
}

size_t ic_expect_count(const struct ic_expectations *expectations)
{
    return expectations ? expectations->count : 0;
}

int ic_expect_apply_case(const struct ic_expectations *expectations, cJSON *c, bool *matched)
{
    const cJSON *id = ic_json_get(c, "id");
    if (!cJSON_IsString(id))
        return 0;
    const struct ic_expect_entry *first = NULL;
    /* Every entry that matches is marked, not only the first: an entry shadowed by an
     * earlier one still describes this case, so it is not stale. */
    for (size_t i = 0; i < expectations->count; i++) {
        if (ic_expect_match(expectations->entries[i].pattern, id->valuestring)) {
            matched[i] = true;
            if (!first)
                first = &expectations->entries[i];
        }
    }
    const cJSON *outcome = ic_json_get(c, "outcome");
    enum ic_outcome observed;
    if (!first || !cJSON_IsString(outcome) ||
        ic_outcome_from_name(outcome->valuestring, &observed) < 0)
        return 0;
    enum ic_outcome expected;
    if (observed == IC_OUTCOME_FAIL || observed == IC_OUTCOME_CRASH ||
        observed == IC_OUTCOME_TIMEOUT)
        expected = IC_OUTCOME_XFAIL;
    else if (observed == IC_OUTCOME_PASS)
        expected = IC_OUTCOME_XPASS;
    else
        return 0; /* unsupported and error are not failures of the library */
    int rc = ic_expect_mark(c, first, ic_outcome_name(observed), expected);
    return rc < 0 ? rc : 1;
}

int ic_expect_apply(const struct ic_expectations *expectations, cJSON *report, char *unmatched,
                    size_t unmatched_size)
{
    cJSON *cases = ic_json_get(report, "cases");
    if (!cJSON_IsArray(cases))
        return IC_EINVAL;
    bool *matched = calloc(expectations->count ? expectations->count : 1, sizeof(bool));
    if (!matched)
        return IC_ENOMEM;
    int changed = 0, rc = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        rc = ic_expect_apply_case(expectations, c, matched);
        if (rc < 0)
            break;
        changed += rc;
    }
    if (rc >= 0)
        ic_expect_list_unmatched(expectations, matched, unmatched, unmatched_size);
    free(matched);
    return rc < 0 ? rc : changed;
}
