#include "ic_diff.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_result.h"
#include "ic_text.h"

/* GitHub refuses comments over 65536 characters: the Markdown stops listing cases past this
 * many bytes and says how many it left out. */
#define IC_DIFF_MARKDOWN_BUDGET         60000
/* Diagnostics can be long; a diff line needs the start of one. */
#define IC_DIFF_TEXT_DIAGNOSTIC_MAX     300
#define IC_DIFF_MARKDOWN_DIAGNOSTIC_MAX 160

static const char *const ic_diff_change_names[IC_DIFF_CHANGE_COUNT] = {
    [IC_DIFF_REGRESSED] = "regressed", [IC_DIFF_IMPROVED] = "improved",
    [IC_DIFF_CHANGED] = "changed",     [IC_DIFF_ADDED] = "added",
    [IC_DIFF_REMOVED] = "removed",
};

static const cJSON *ic_get(const cJSON *object, const char *key)
{
    return ic_json_get(object, key);
}

static const char *ic_or_empty(const char *s)
{
    return s ? s : "";
}

/* --- Severity ------------------------------------------------------------------------------- */

/* The table's badness (ic_result.h). */
static int ic_outcome_severity(enum ic_outcome outcome)
{
    return ic_outcome_info(outcome)->badness;
}

int ic_diff_severity(const cJSON *c)
{
    enum ic_outcome outcome, observed;
    const char *name = ic_json_string(c, "outcome");
    if (!name || ic_outcome_from_name(name, &outcome) < 0)
        return 2;
    if (outcome == IC_OUTCOME_XFAIL || outcome == IC_OUTCOME_XPASS ||
        outcome == IC_OUTCOME_WAIVED) {
        const char *seen = ic_json_string(ic_get(c, "expectation"), "observed");
        if (seen && ic_outcome_from_name(seen, &observed) == 0 && observed != IC_OUTCOME_XFAIL &&
            observed != IC_OUTCOME_XPASS && observed != IC_OUTCOME_WAIVED)
            return ic_outcome_severity(observed);
    }
    return ic_outcome_severity(outcome);
}

/* --- Alignment ------------------------------------------------------------------------------ */

struct ic_keyed_case {
    const char *environment; /* "" for single reports */
    const char *id;
    const cJSON *c;
};

static int ic_keyed_compare(const void *a, const void *b)
{
    const struct ic_keyed_case *x = a, *y = b;
    int rc = strcmp(x->environment, y->environment);
    return rc ? rc : strcmp(x->id, y->id);
}

static int ic_entry_compare(const void *a, const void *b)
{
    const struct ic_diff_entry *x = a, *y = b;
    if (x->change != y->change)
        return x->change < y->change ? -1 : 1;
    int rc = strcmp(ic_or_empty(x->environment), ic_or_empty(y->environment));
    return rc ? rc : strcmp(x->id, y->id);
}

static struct ic_diff_environment *ic_diff_find_environment(const struct ic_diff *diff,
                                                            const char *id)
{
    for (size_t i = 0; i < diff->nenvironments; i++) {
        if (strcmp(diff->environments[i].id, id) == 0)
            return &diff->environments[i];
    }
    return NULL;
}

static int ic_diff_collect_environments(struct ic_diff *diff)
{
    const cJSON *sides[2] = {ic_get(diff->base, "environments"),
                             ic_get(diff->head, "environments")};
    size_t capacity = (size_t)cJSON_GetArraySize(sides[0]) + (size_t)cJSON_GetArraySize(sides[1]);
    diff->environments = calloc(capacity ? capacity : 1, sizeof(*diff->environments));
    if (!diff->environments)
        return IC_ENOMEM;
    for (int side = 0; side < 2; side++) {
        const cJSON *entry;
        cJSON_ArrayForEach(entry, sides[side])
        {
            const char *id = ic_json_string(entry, "id");
            if (!id)
                continue;
            struct ic_diff_environment *env = ic_diff_find_environment(diff, id);
            if (!env) {
                env = &diff->environments[diff->nenvironments++];
                env->id = id;
            }
            if (side == 0)
                env->base = entry;
            else
                env->head = entry;
        }
    }
    return 0;
}

/* The cases of one side that take part: all of a single report; for merged reports, those of
 * environments in both (the others are counted per environment). */
static int ic_diff_keyed(struct ic_diff *diff, const cJSON *report, bool is_base,
                         struct ic_keyed_case **ret, size_t *ret_count)
{
    const cJSON *cases = ic_get(report, "cases");
    struct ic_keyed_case *keyed = calloc((size_t)cJSON_GetArraySize(cases) + 1, sizeof(*keyed));
    size_t n = 0;
    if (!keyed)
        return IC_ENOMEM;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *id = ic_json_string(c, "id");
        const char *env = ic_json_string(c, "environment");
        if (!id)
            continue;
        if (diff->merged) {
            struct ic_diff_environment *known = env ? ic_diff_find_environment(diff, env) : NULL;
            if (!known)
                continue;
            if (is_base)
                known->base_cases++;
            else
                known->head_cases++;
            if (!known->base || !known->head)
                continue;
        }
        keyed[n++] = (struct ic_keyed_case){diff->merged ? env : "", id, c};
    }
    if (n)
        qsort(keyed, n, sizeof(*keyed), ic_keyed_compare);
    *ret = keyed;
    *ret_count = n;
    return 0;
}

static bool ic_same_string(const cJSON *a, const cJSON *b, const char *key)
{
    return strcmp(ic_or_empty(ic_json_string(a, key)), ic_or_empty(ic_json_string(b, key))) == 0;
}

/* Length of what varies from run to run at s, or 0: an address ("0x" and at least 8 hex
 * digits), or the number after "aligned to " (interopcheck reports the alignment of an address
 * it found). */
static size_t ic_run_specific_length(const char *s, const char *start)
{
    static const char aligned[] = "aligned to ";
    size_t n = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        while (s[2 + n] && strchr("0123456789abcdefABCDEF", s[2 + n]))
            n++;
        return n >= 8 ? n + 2 : 0;
    }
    if ((size_t)(s - start) >= sizeof(aligned) - 1 &&
        strncmp(s - (sizeof(aligned) - 1), aligned, sizeof(aligned) - 1) == 0) {
        while (s[n] >= '0' && s[n] <= '9')
            n++;
    }
    return n;
}

/* Diagnostics compared with addresses and their alignments taken as equal: memory is laid out
 * anew in every run, and a case that fails the same way in both must not show as changed.
 * Other numbers (flags such as 0x2, sizes, versions) count. A dead worker's last output (the
 * tail of its stderr, which the supervisor appends after IC_LAST_OUTPUT) is not compared: it
 * varies with timing and with whichever library's signal handler printed last, while the
 * signal before it is what the case is about. */
#define IC_LAST_OUTPUT "; last output:"
static bool ic_same_diagnostic(const cJSON *a, const cJSON *b)
{
    const char *x0 = ic_or_empty(ic_json_string(a, "diagnostic"));
    const char *y0 = ic_or_empty(ic_json_string(b, "diagnostic"));
    const char *x = x0, *y = y0;
    while (*x && *y) {
        if (strncmp(x, IC_LAST_OUTPUT, strlen(IC_LAST_OUTPUT)) == 0 &&
            strncmp(y, IC_LAST_OUTPUT, strlen(IC_LAST_OUTPUT)) == 0)
            return true;
        size_t skip_x = ic_run_specific_length(x, x0), skip_y = ic_run_specific_length(y, y0);
        if (skip_x && skip_y) {
            x += skip_x;
            y += skip_y;
        } else if (*x++ != *y++) {
            return false;
        }
    }
    return *x == *y;
}

/* How a case that is in both reports changed; IC_DIFF_CHANGE_COUNT when it did not. */
static enum ic_diff_change ic_diff_classify(const cJSON *base, const cJSON *head)
{
    int before = ic_diff_severity(base), after = ic_diff_severity(head);
    if (after > before)
        return IC_DIFF_REGRESSED;
    if (after < before)
        return IC_DIFF_IMPROVED;
    if (!ic_same_string(base, head, "outcome") || !ic_same_string(base, head, "rule") ||
        !ic_same_diagnostic(base, head))
        return IC_DIFF_CHANGED;
    return IC_DIFF_CHANGE_COUNT;
}

static void ic_diff_add(struct ic_diff *diff, enum ic_diff_change change,
                        const struct ic_keyed_case *base, const struct ic_keyed_case *head)
{
    const struct ic_keyed_case *any = base ? base : head;
    diff->entries[diff->count++] = (struct ic_diff_entry){
        .change = change,
        .environment = diff->merged ? any->environment : NULL,
        .id = any->id,
        .base = base ? base->c : NULL,
        .head = head ? head->c : NULL,
    };
    diff->changes[change]++;
}
/* Appends the environment ids of one side (base or new) to err, from `used`; returns the new
 * length. The ids come from the files: escaped, as the message goes to a terminal. */
static size_t ic_diff_list_ids(const struct ic_diff *diff, bool base, char *err, size_t used,
                               size_t err_size)
{
    char shown[128];
    for (size_t i = 0; i < diff->nenvironments && used < err_size; i++) {
        if (!(base ? diff->environments[i].base : diff->environments[i].head))
            continue;
        ic_text_for_terminal(shown, sizeof(shown), diff->environments[i].id);
        used += (size_t)snprintf(err + used, err_size - used, " %s", shown);
    }
    return used;
}

int ic_diff_reports(const cJSON *base, const cJSON *head, struct ic_diff *ret, char *err,
                    size_t err_size)
{
    struct ic_diff diff = {.base = base, .head = head};
    struct ic_keyed_case *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    bool base_merged = ic_get(base, "environments") != NULL;
    bool head_merged = ic_get(head, "environments") != NULL;
    int rc = IC_ENOMEM;

    if (base_merged != head_merged) {
        snprintf(err, err_size,
                 "the %s report is merged (several environments) and the %s is a single run: "
                 "compare two single runs, or two merged reports",
                 base_merged ? "base" : "new", base_merged ? "new one" : "base");
        return IC_EINVAL;
    }
    diff.merged = base_merged;
    if (diff.merged) {
        if (ic_diff_collect_environments(&diff) < 0)
            goto fail;
        bool common = false;
        for (size_t i = 0; i < diff.nenvironments; i++)
            common = common || (diff.environments[i].base && diff.environments[i].head);
        if (!common) {
            size_t used = (size_t)snprintf(err, err_size,
                                           "the environments differ: no environment id is in "
                                           "both reports (base:");
            used = ic_diff_list_ids(&diff, true, err, used, err_size);
            if (used < err_size)
                used += (size_t)snprintf(err + used, err_size - used, "; new:");
            used = ic_diff_list_ids(&diff, false, err, used, err_size);
            if (used < err_size)
                snprintf(err + used, err_size - used, "), so nothing can be compared");
            rc = IC_EINVAL;
            goto fail;
        }
    }
    if (ic_diff_keyed(&diff, base, true, &a, &na) < 0 ||
        ic_diff_keyed(&diff, head, false, &b, &nb) < 0)
        goto fail;
    diff.entries = calloc(na + nb + 1, sizeof(*diff.entries));
    if (!diff.entries)
        goto fail;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int order = i == na ? 1 : j == nb ? -1 : ic_keyed_compare(&a[i], &b[j]);
        if (order < 0) {
            ic_diff_add(&diff, IC_DIFF_REMOVED, &a[i++], NULL);
        } else if (order > 0) {
            ic_diff_add(&diff, IC_DIFF_ADDED, NULL, &b[j++]);
        } else {
            enum ic_diff_change change = ic_diff_classify(a[i].c, b[j].c);
            diff.compared++;
            if (change == IC_DIFF_CHANGE_COUNT)
                diff.unchanged++;
            else
                ic_diff_add(&diff, change, &a[i], &b[j]);
            i++;
            j++;
        }
    }
    if (diff.count)
        qsort(diff.entries, diff.count, sizeof(*diff.entries), ic_entry_compare);
    free(a);
    free(b);
    *ret = diff;
    return 0;
fail:
    if (rc == IC_ENOMEM)
        snprintf(err, err_size, "out of memory while comparing the reports");
    free(a);
    free(b);
    ic_diff_release(&diff);
    return rc;
}

void ic_diff_release(struct ic_diff *diff)
{
    free(diff->entries);
    free(diff->environments);
    memset(diff, 0, sizeof(*diff));
}

/* --- Output --------------------------------------------------------------------------------- */

/* Counts what is written, for the Markdown budget, and remembers a failed write. */
struct ic_out {
    FILE *file;
    enum ic_diff_format format;
    size_t bytes;
    bool failed;
};

static void ic_out_printf(struct ic_out *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ic_out_printf(struct ic_out *out, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int n = vfprintf(out->file, fmt, args);
    va_end(args);
    if (n < 0)
        out->failed = true;
    else
        out->bytes += (size_t)n;
}

static void ic_out_putc(struct ic_out *out, char ch)
{
    if (fputc(ch, out->file) == EOF)
        out->failed = true;
    out->bytes++;
}

/* How many bytes of `s` to show at most `max`: cut before a UTF-8 continuation byte, so a
 * character is never split. */
static size_t ic_cut(const char *s, size_t max, bool *cut)
{
    size_t len = strlen(s);
    *cut = len > max;
    if (!*cut)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    return max;
}

/* Library text for a terminal: escaped (IC_ESCAPE_TERMINAL), so escape sequences and line
 * breaks show as text, and cut with ic_text's marker at `max` bytes (at most 511). */
static void ic_put_text(struct ic_out *out, const char *s, size_t max)
{
    char shown[512];
    ic_text_for_terminal(shown, max < sizeof(shown) ? max + 1 : sizeof(shown), s);
    ic_out_printf(out, "%s", shown);
}

/* Library text for Markdown: a code span, which renders no markup, no HTML and no mentions.
 * Its delimiter is one backtick more than the longest run inside; '|' is escaped, as GitHub
 * tables require even within code spans; control characters become spaces. */
static void ic_put_code(struct ic_out *out, const char *s, size_t max)
{
    bool cut;
    size_t len = ic_cut(s, max, &cut);
    size_t longest = 0, run = 0;
    if (len == 0)
        return;
    for (size_t i = 0; i < len; i++) {
        run = s[i] == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    for (size_t k = 0; k <= longest; k++)
        ic_out_putc(out, '`');
    bool pad = s[0] == '`' || s[len - 1] == '`' || s[0] == ' ';
    if (pad)
        ic_out_putc(out, ' ');
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '|')
            ic_out_printf(out, "\\|");
        else
            ic_out_putc(out, ch < 0x20 || ch == 0x7f ? ' ' : (char)ch);
    }
    if (cut)
        ic_out_printf(out, "...");
    if (pad)
        ic_out_putc(out, ' ');
    for (size_t k = 0; k <= longest; k++)
        ic_out_putc(out, '`');
}

static void ic_put(struct ic_out *out, const char *s, size_t max)
{
    if (out->format == IC_DIFF_MARKDOWN)
        ic_put_code(out, s, max);
    else
        ic_put_text(out, s, max);
}

/* --- Versions ------------------------------------------------------------------------------- */

/* A library's state as one word or its version: what the versions table shows. */
static const char *ic_library_label(const cJSON *environment, const char *name)
{
    const cJSON *lib;
    cJSON_ArrayForEach(lib, ic_get(environment, "libraries"))
    {
        if (strcmp(ic_or_empty(ic_json_string(lib, "name")), name) != 0)
            continue;
        const char *status = ic_or_empty(ic_json_string(lib, "status"));
        if (strcmp(status, "loaded") == 0)
            return ic_json_string(lib, "version") ? ic_json_string(lib, "version") : "?";
        if (strcmp(status, "not_installed") == 0)
            return "not installed";
        if (strcmp(status, "import_error") == 0)
            return "import error";
        if (strcmp(status, "import_crash") == 0)
            return "import crash";
        if (strcmp(status, "invalid_probe") == 0)
            return "invalid probe";
        return "not loaded";
    }
    return "absent";
}

static bool ic_library_listed_before(const cJSON *environment, const cJSON *entry, const char *name)
{
    const cJSON *lib;
    cJSON_ArrayForEach(lib, ic_get(environment, "libraries"))
    {
        if (lib == entry)
            return false;
        if (strcmp(ic_or_empty(ic_json_string(lib, "name")), name) == 0)
            return true;
    }
    return false;
}

static void ic_version_row(struct ic_out *out, const char *name, const char *before,
                           const char *after)
{
    bool changed = strcmp(before, after) != 0;
    if (out->format == IC_DIFF_MARKDOWN) {
        ic_out_printf(out, "| %s", changed ? "**" : "");
        ic_put_code(out, name, 64);
        ic_out_printf(out, "%s | ", changed ? "**" : "");
        ic_put_code(out, before, 80);
        ic_out_printf(out, " | ");
        ic_put_code(out, after, 80);
        ic_out_printf(out, " | %s |\n", changed ? "changed" : "");
    } else {
        ic_out_printf(out, "  ");
        ic_put_text(out, name, 64);
        ic_out_printf(out, ": ");
        ic_put_text(out, before, 80);
        ic_out_printf(out, " -> ");
        ic_put_text(out, after, 80);
        ic_out_printf(out, "%s\n", changed ? "  (changed)" : "");
    }
}

/* The versions of both sides: interopcheck, Python, then every library that either side
 * loaded or failed to import (libraries outside both runs are left out). */
static void ic_write_versions(struct ic_out *out, const cJSON *base_holder,
                              const cJSON *head_holder)
{
    const cJSON *base_env = ic_get(base_holder, "environment");
    const cJSON *head_env = ic_get(head_holder, "environment");
    if (out->format == IC_DIFF_MARKDOWN)
        ic_out_printf(out, "| library | base | new | |\n|---|---|---|---|\n");
    ic_version_row(out, "interopcheck",
                   ic_or_empty(ic_json_string(ic_get(base_holder, "tool"), "version")),
                   ic_or_empty(ic_json_string(ic_get(head_holder, "tool"), "version")));
    ic_version_row(out, "python",
                   ic_or_empty(ic_json_string(ic_get(base_env, "python"), "version")),
                   ic_or_empty(ic_json_string(ic_get(head_env, "python"), "version")));
    const cJSON *envs[2] = {base_env, head_env};
    for (int side = 0; side < 2; side++) {
        const cJSON *lib;
        cJSON_ArrayForEach(lib, ic_get(envs[side], "libraries"))
        {
            const char *name = ic_json_string(lib, "name");
            if (!name || ic_library_listed_before(envs[side], lib, name))
                continue;
            if (side == 1 && strcmp(ic_library_label(base_env, name), "absent") != 0)
                continue; /* listed with the base's libraries */
            const char *before = ic_library_label(base_env, name);
            const char *after = ic_library_label(head_env, name);
            bool outside = (strcmp(before, "not loaded") == 0 || strcmp(before, "absent") == 0) &&
                           (strcmp(after, "not loaded") == 0 || strcmp(after, "absent") == 0);
            if (!outside)
                ic_version_row(out, name, before, after);
        }
    }
}

/* --- Cases ---------------------------------------------------------------------------------- */

/* The side whose rule and diagnostic explain an entry: what broke for a regression or a
 * change, what used to be wrong for an improvement, the only side otherwise. */
static const cJSON *ic_explaining_side(const struct ic_diff_entry *entry)
{
    return entry->change == IC_DIFF_IMPROVED || !entry->head ? entry->base : entry->head;
}

static void ic_write_outcome(struct ic_out *out, const cJSON *c)
{
    const char *outcome = ic_or_empty(ic_json_string(c, "outcome"));
    const char *observed = ic_json_string(ic_get(c, "expectation"), "observed");
    ic_put(out, outcome, 32);
    if (observed) {
        ic_out_printf(out, " (");
        ic_put(out, observed, 32);
        ic_out_printf(out, ")");
    }
}

static void ic_write_entry_text(struct ic_out *out, const struct ic_diff_entry *entry)
{
    const cJSON *shown = ic_explaining_side(entry);
    ic_out_printf(out, "  ");
    if (entry->environment) {
        ic_out_printf(out, "[");
        ic_put_text(out, entry->environment, 128);
        ic_out_printf(out, "] ");
    }
    ic_put_text(out, entry->id, 256);
    ic_out_printf(out, ": ");
    if (entry->base && entry->head) {
        ic_write_outcome(out, entry->base);
        if (entry->change == IC_DIFF_CHANGED &&
            ic_same_string(entry->base, entry->head, "outcome")) {
            const char *rule = ic_json_string(entry->base, "rule");
            if (rule) {
                ic_out_printf(out, " [");
                ic_put_text(out, rule, 80);
                ic_out_printf(out, "]");
            }
        }
        ic_out_printf(out, " -> ");
    } else if (entry->base) {
        ic_out_printf(out, "was ");
    }
    ic_write_outcome(out, entry->head ? entry->head : entry->base);
    if (entry->change == IC_DIFF_IMPROVED &&
        (ic_json_string(shown, "rule") || *ic_or_empty(ic_json_string(shown, "diagnostic"))))
        ic_out_printf(out, ", was");
    const char *rule = ic_json_string(shown, "rule");
    const char *diagnostic = ic_json_string(shown, "diagnostic");
    if (rule) {
        ic_out_printf(out, " [");
        ic_put_text(out, rule, 80);
        ic_out_printf(out, "]");
    }
    if (diagnostic && *diagnostic) {
        ic_out_printf(out, ": ");
        ic_put_text(out, diagnostic, IC_DIFF_TEXT_DIAGNOSTIC_MAX);
    }
    ic_out_printf(out, "\n");
    /* A change within one outcome is only visible next to what it was. */
    if (entry->change == IC_DIFF_CHANGED && entry->base && entry->head &&
        !ic_same_string(entry->base, entry->head, "diagnostic")) {
        ic_out_printf(out, "      was: ");
        ic_put_text(out, ic_or_empty(ic_json_string(entry->base, "diagnostic")),
                    IC_DIFF_TEXT_DIAGNOSTIC_MAX);
        ic_out_printf(out, "\n");
    }
}

static void ic_write_entry_markdown(struct ic_out *out, const struct ic_diff_entry *entry,
                                    bool merged)
{
    const cJSON *shown = ic_explaining_side(entry);
    ic_out_printf(out, "| ");
    if (merged) {
        ic_put_code(out, ic_or_empty(entry->environment), 128);
        ic_out_printf(out, " | ");
    }
    ic_put_code(out, entry->id, 256);
    ic_out_printf(out, " | ");
    if (entry->base)
        ic_write_outcome(out, entry->base);
    ic_out_printf(out, " | ");
    if (entry->head)
        ic_write_outcome(out, entry->head);
    ic_out_printf(out, " | ");
    ic_put_code(out, ic_or_empty(ic_json_string(shown, "rule")), 80);
    ic_out_printf(out, " | ");
    ic_put_code(out, ic_or_empty(ic_json_string(shown, "diagnostic")),
                IC_DIFF_MARKDOWN_DIAGNOSTIC_MAX);
    ic_out_printf(out, " |\n");
}

static void ic_write_section(struct ic_out *out, const struct ic_diff *diff,
                             enum ic_diff_change change)
{
    size_t total = diff->changes[change];
    if (total == 0)
        return;
    const char *name = ic_diff_change_names[change];
    if (out->format == IC_DIFF_TEXT) {
        ic_out_printf(out, "\n%s (%zu):\n", name, total);
        for (size_t i = 0; i < diff->count; i++) {
            if (diff->entries[i].change == change)
                ic_write_entry_text(out, &diff->entries[i]);
        }
        return;
    }
    /* Regressions are what a reviewer must see; the rest folds away. */
    if (change == IC_DIFF_REGRESSED)
        ic_out_printf(out, "\n### %c%s (%zu)\n\n", name[0] - 'a' + 'A', name + 1, total);
    else
        ic_out_printf(out, "\n<details><summary>%c%s (%zu)</summary>\n\n", name[0] - 'a' + 'A',
                      name + 1, total);
    bool from_base = change == IC_DIFF_IMPROVED || change == IC_DIFF_REMOVED;
    ic_out_printf(out, "| %scase | base | new | %srule | %sdiagnostic |\n|%s---|---|---|---|---|\n",
                  diff->merged ? "environment | " : "", from_base ? "base " : "",
                  from_base ? "base " : "", diff->merged ? "---|" : "");
    size_t shown = 0;
    for (size_t i = 0; i < diff->count && out->bytes < IC_DIFF_MARKDOWN_BUDGET; i++) {
        if (diff->entries[i].change == change) {
            ic_write_entry_markdown(out, &diff->entries[i], diff->merged);
            shown++;
        }
    }
    if (shown < total)
        ic_out_printf(out,
                      "\n%zu more not listed here, to keep the comment within GitHub's limit; "
                      "`interopcheck diff` without `--format markdown` lists them all.\n",
                      total - shown);
    if (change != IC_DIFF_REGRESSED)
        ic_out_printf(out, "\n</details>\n");
}

static void ic_write_counts(struct ic_out *out, const struct ic_diff *diff)
{
    bool md = out->format == IC_DIFF_MARKDOWN;
    ic_out_printf(
        out,
        "%s%zu regressed%s, %zu improved, %zu changed, %zu added, %zu removed, %zu "
        "unchanged (%zu cases in both)\n",
        md && diff->changes[IC_DIFF_REGRESSED] ? "**" : "", diff->changes[IC_DIFF_REGRESSED],
        md && diff->changes[IC_DIFF_REGRESSED] ? "**" : "", diff->changes[IC_DIFF_IMPROVED],
        diff->changes[IC_DIFF_CHANGED], diff->changes[IC_DIFF_ADDED],
        diff->changes[IC_DIFF_REMOVED], diff->unchanged, diff->compared);
}

static void ic_write_environments(struct ic_out *out, const struct ic_diff *diff)
{
    bool md = out->format == IC_DIFF_MARKDOWN;
    for (size_t i = 0; i < diff->nenvironments; i++) {
        const struct ic_diff_environment *env = &diff->environments[i];
        if (env->base && env->head) {
            ic_out_printf(out, md ? "\n**Environment** " : "\nenvironment ");
            ic_put(out, env->id, 128);
            ic_out_printf(out, md ? "\n\n" : ":\n");
            ic_write_versions(out, env->base, env->head);
        }
    }
    for (size_t i = 0; i < diff->nenvironments; i++) {
        const struct ic_diff_environment *env = &diff->environments[i];
        if (env->base && env->head)
            continue;
        ic_out_printf(out, md ? "\nThe environment " : "\nthe environment ");
        ic_put(out, env->id, 128);
        ic_out_printf(out, " is only in the %s report (%zu cases, not compared)%s\n",
                      env->base ? "base" : "new", env->base ? env->base_cases : env->head_cases,
                      md ? "." : "");
    }
}

int ic_diff_write(const struct ic_diff *diff, enum ic_diff_format format, const char *base_name,
                  const char *head_name, FILE *file)
{
    struct ic_out out = {.file = file, .format = format};
    if (format == IC_DIFF_MARKDOWN) {
        ic_out_printf(&out, "## interopcheck diff\n\nbase ");
        ic_put_code(&out, base_name, 200);
        ic_out_printf(&out, ", new ");
        ic_put_code(&out, head_name, 200);
        ic_out_printf(&out, "\n\n");
    } else {
        ic_out_printf(&out, "interopcheck diff: base ");
        ic_put_text(&out, base_name, 400);
        ic_out_printf(&out, ", new ");
        ic_put_text(&out, head_name, 400);
        ic_out_printf(&out, "\n\nversions (base -> new):\n");
    }
    if (diff->merged)
        ic_write_environments(&out, diff);
    else
        ic_write_versions(&out, diff->base, diff->head);
    ic_out_printf(&out, "\n");
    ic_write_counts(&out, diff);
    for (int change = 0; change < IC_DIFF_CHANGE_COUNT; change++)
        ic_write_section(&out, diff, (enum ic_diff_change)change);
    if (fflush(file) != 0)
        out.failed = true;
    return out.failed ? IC_EIO : 0;
}
