/* Unit tests of ic_text: UTF-8 repair, cuts with their marker, the escapes of every output
 * language (the terminal's included), positions in a text, atomic files, and the capping of
 * JSON trees (ic_json), each fed hostile input: invalid and cut UTF-8, encoded surrogates,
 * control characters, markup, and text far over every cap. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_text.h"
#include "tap.h"

#define FFFD     "\xEF\xBF\xBD"
#define ELLIPSIS "\xE2\x80\xA6"

/* The repaired form of a counted input, as a C string in a static buffer. */
static const char *repaired(const char *src, size_t len)
{
    static char out[256];
    ic_utf8_repair(out, sizeof(out), src, len, NULL);
    return out;
}

static const char *escaped(const char *src, enum ic_text_escape how)
{
    static struct ic_text_buf buf;
    ic_text_buf_release(&buf);
    ic_text_buf_init(&buf);
    ic_text_buf_add_escaped(&buf, src, strlen(src), how, IC_TEXT_NO_CAP);
    return ic_text_buf_str(&buf);
}

/* Whether `src` escaped for `how` is exactly `want`. */
static bool escapes_to(const char *src, enum ic_text_escape how, const char *want)
{
    return strcmp(escaped(src, how), want) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static void test_valid(void)
{
    TAP_OK(ic_utf8_valid("", 0), "the empty text is valid");
    TAP_OK(ic_utf8_valid("plain ascii", 11), "ASCII is valid");
    const char *mixed = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"; /* é € 😀 U+10FFFF */
    TAP_OK(ic_utf8_valid(mixed, strlen(mixed)), "two-, three- and four-byte characters are valid");
    TAP_OK(!ic_utf8_valid("\xC0\xAF", 2), "an overlong '/' is not");
    TAP_OK(!ic_utf8_valid("\xE0\x80\xAF", 3), "a three-byte overlong form is not");
    TAP_OK(!ic_utf8_valid("\xED\xA0\x80", 3), "an encoded surrogate is not");
    TAP_OK(!ic_utf8_valid("\xF4\x90\x80\x80", 4), "a code point above U+10FFFF is not");
    TAP_OK(!ic_utf8_valid("\xF5\x80\x80\x80", 4), "F5 never starts a character");
    TAP_OK(!ic_utf8_valid("\x80", 1), "a lone continuation byte is not");
    TAP_OK(!ic_utf8_valid("ab\xE2\x82", 4), "a character cut at the end is not");
    TAP_OK(!ic_utf8_valid("a\0b", 3), "a NUL inside a counted text is not (repair replaces it)");
    TAP_OK(ic_utf8_valid_prefix("ab\xC3\xA9"
                                "c\xFF"
                                "d",
                                7) == 5,
           "the valid prefix ends at the first bad byte");
    TAP_OK(ic_utf8_valid_prefix("ab\xC3\xA9\xE2\x82", 6) == 4,
           "... or at a character cut at the end");
    TAP_OK(ic_utf8_valid_prefix(mixed, strlen(mixed)) == strlen(mixed),
           "... and is the whole of a valid text");
    /* ASCII is skipped eight bytes at a time: a NUL, a lone continuation byte or a valid
     * two-byte character at every place of a 40-byte text, and every length, end the word
     * steps where the byte steps would. */
    size_t wrong = 0;
    for (size_t at = 0; at < 40; at++) {
        for (int kind = 0; kind < 3; kind++) {
            char text[41];
            memset(text, 'a', sizeof(text));
            text[at] = kind == 0 ? '\0' : kind == 1 ? '\x80' : '\xC3';
            if (kind == 2 && at + 1 < 40)
                text[at + 1] = '\xA9';
            for (size_t len = 0; len <= 40; len++) {
                size_t want = at >= len ? len : kind == 2 && at + 1 < len ? len : at;
                wrong += ic_utf8_valid_prefix(text, len) != want;
            }
        }
    }
    TAP_OK(wrong == 0, "a bad byte or a character ends ASCII runs at its own place (%zu wrong)",
           wrong);
}

static void test_repair(void)
{
    TAP_OK(strcmp(repaired("a\xFF"
                           "b",
                           3),
                  "a" FFFD "b") == 0,
           "an invalid byte is U+FFFD");
    TAP_OK(strcmp(repaired("\xED\xA0\x80x", 4), FFFD "x") == 0,
           "a lone surrogate's encoding is one U+FFFD");
    TAP_OK(strcmp(repaired("\xED\xB2\x80\xED\xA0\xBD", 6), FFFD FFFD) == 0,
           "two lone surrogates are two U+FFFD");
    TAP_OK(strcmp(repaired("x\xED\xA0", 3), "x") == 0,
           "a surrogate's encoding cut at the end is removed like any cut");
    TAP_OK(strcmp(repaired("\xE2\x82x", 3), FFFD "x") == 0,
           "a sequence broken in the middle is one U+FFFD (its maximal subpart)");
    TAP_OK(strcmp(repaired("\xF0\x80\x80\x80", 4), FFFD FFFD FFFD FFFD) == 0,
           "an overlong four-byte form is one U+FFFD per byte, as Python's decoder says");
    TAP_OK(strcmp(repaired("\xC0\xAF", 2), FFFD FFFD) == 0, "an overlong '/' is two U+FFFD");
    TAP_OK(strcmp(repaired("a\0b", 3), "a" FFFD "b") == 0, "a NUL becomes U+FFFD");

    char out[64];
    size_t consumed = 99;
    size_t n = ic_utf8_repair(out, sizeof(out), "ab\xE2\x82", 4, &consumed);
    TAP_OK(n == 2 && strcmp(out, "ab") == 0 && consumed == 2,
           "a sequence cut at the end is removed and not counted as consumed (%zu, %zu)", n,
           consumed);
    n = ic_utf8_repair(out, 7, "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC", 9, &consumed);
    TAP_OK(n == 6 && consumed == 6 && strcmp(out, "\xE2\x82\xAC\xE2\x82\xAC") == 0,
           "a full destination stops on a character boundary");
    n = ic_utf8_repair(out, 1, "abc", 3, &consumed);
    TAP_OK(n == 0 && out[0] == '\0' && consumed == 0, "a one-byte destination gets \"\"");
}

static void test_repair_in_place(void)
{
    char buf[8];
    memset(buf, 0xFF, 7);
    buf[7] = '\0';
    ic_utf8_repair_in_place(buf, sizeof(buf));
    TAP_OK(strcmp(buf, FFFD FFFD) == 0 && ic_utf8_valid(buf, strlen(buf)),
           "replacements that outgrow the buffer are cut on a character boundary");
    char fine[16] = "d\xC3\xA9j\xC3\xA0 vu";
    ic_utf8_repair_in_place(fine, sizeof(fine));
    TAP_OK(strcmp(fine, "d\xC3\xA9j\xC3\xA0 vu") == 0, "valid text is left alone");
    char cut[6] = "abc\xE2\x82";
    ic_utf8_repair_in_place(cut, sizeof(cut));
    TAP_OK(strcmp(cut, "abc") == 0, "a character snprintf cut in half is removed");
}

static void test_floor(void)
{
    const char *s = "a\xC3\xA9\xE2\x82\xAC"; /* a é € */
    TAP_OK(ic_utf8_floor(s, 6, 2) == 1, "inside é the boundary is before it");
    TAP_OK(ic_utf8_floor(s, 6, 3) == 3, "after é is a boundary");
    TAP_OK(ic_utf8_floor(s, 6, 5) == 3, "inside € the boundary is before it");
    TAP_OK(ic_utf8_floor(s, 6, 100) == 6, "a limit past the end is the end");
}

static void test_marker_and_copy(void)
{
    char marker[IC_TEXT_MARKER_MAX + 1];
    size_t n = ic_text_cut_marker(marker, sizeof(marker), SIZE_MAX);
    TAP_OK(n <= IC_TEXT_MARKER_MAX && strstr(marker, ELLIPSIS " [") == marker + 1,
           "the longest marker fits IC_TEXT_MARKER_MAX (%s)", marker);
    ic_text_cut_marker(marker, sizeof(marker), 1);
    TAP_OK(strcmp(marker, " " ELLIPSIS " [1 byte cut]") == 0, "one byte is singular");

    char dst[100];
    ic_text_copy(dst, sizeof(dst), "short", 5);
    TAP_OK(strcmp(dst, "short") == 0, "a copy that fits is the text itself");

    /* 10000 bytes of 'é' into 100: a valid prefix, then the marker with the exact count. */
    size_t len = 10000;
    char *big = malloc(len);
    for (size_t i = 0; i < len; i += 2)
        memcpy(big + i, "\xC3\xA9", 2);
    ic_text_copy(dst, sizeof(dst), big, len);
    const char *mark = strstr(dst, " " ELLIPSIS " [");
    size_t kept = mark ? (size_t)(mark - dst) : 0;
    char expect[IC_TEXT_MARKER_MAX + 1];
    ic_text_cut_marker(expect, sizeof(expect), len - kept);
    TAP_OK(mark && kept % 2 == 0 && strcmp(mark, expect) == 0 && strlen(dst) < sizeof(dst) &&
               ic_utf8_valid(dst, strlen(dst)),
           "a long copy keeps whole characters and says how many bytes it cut (%s)",
           mark ? mark : dst);

    char tiny[10];
    ic_text_copy(tiny, sizeof(tiny), big, len);
    TAP_OK(strlen(tiny) == 8 && ic_utf8_valid(tiny, 8),
           "a buffer too small for the marker keeps a plain, valid cut");
    free(big);

    char hostile[64];
    ic_text_copy(hostile, sizeof(hostile), "x\0y\xED\xA0\x80z", 7);
    TAP_OK(strcmp(hostile, "x" FFFD "y" FFFD "z") == 0,
           "a counted copy keeps what follows a NUL and repairs a surrogate");
}

static void test_fix_formatted(void)
{
    char buf[100];
    char text[400];
    memset(text, 0, sizeof(text));
    for (size_t i = 0; i + 3 < sizeof(text); i += 3)
        memcpy(text + i, "\xE2\x82\xAC", 3);
    int n = snprintf(buf, sizeof(buf), "diagnostic: %s", text);
    ic_text_fix_formatted(buf, sizeof(buf), n);
    char *mark = strstr(buf, " " ELLIPSIS " [");
    TAP_OK(mark && ends_with(buf, " bytes cut]") && ic_utf8_valid(buf, strlen(buf)),
           "a formatted text cut in a character is repaired and marked (%s)", buf);
    size_t kept = mark ? (size_t)(mark - buf) : 0;
    char expect[64];
    snprintf(expect, sizeof(expect), "[%zu bytes cut]", (size_t)n - kept);
    TAP_OK(mark && strstr(mark, expect) != NULL, "the marker counts the bytes left out (%s)",
           expect);

    n = snprintf(buf, sizeof(buf), "bad byte \xFF here");
    ic_text_fix_formatted(buf, sizeof(buf), n);
    TAP_OK(strcmp(buf, "bad byte " FFFD " here") == 0, "a text that fit is only repaired");

    char small[20];
    n = snprintf(small, sizeof(small), "%s", text);
    ic_text_fix_formatted(small, sizeof(small), n);
    TAP_OK(strlen(small) == 18 && ic_utf8_valid(small, 18),
           "a buffer too small for a marker keeps whole characters");
    ic_text_fix_formatted(small, 0, 5);
    TAP_OK(1, "a zero size is harmless");
}

static void test_buf(void)
{
    struct ic_text_buf buf;
    ic_text_buf_init(&buf);
    TAP_OK(strcmp(ic_text_buf_str(&buf), "") == 0, "a new buffer reads as \"\"");
    ic_text_buf_adds(&buf, "a");
    ic_text_buf_addf(&buf, "%d-%s", 42, "b");
    for (int i = 0; i < 1000; i++)
        ic_text_buf_add(&buf, "0123456789", 10);
    TAP_OK(buf.status == 0 && buf.len == 10005 && strncmp(buf.data, "a42-b0123", 9) == 0 &&
               buf.data[buf.len] == '\0',
           "appends grow the buffer and keep it NUL-terminated");
    ic_text_buf_truncate(&buf, 3);
    TAP_OK(strcmp(ic_text_buf_str(&buf), "a42") == 0, "truncate takes text back");
    TAP_OK(ic_text_buf_add(&buf, "x", SIZE_MAX) == IC_ENOMEM, "an impossible size is IC_ENOMEM");
    TAP_OK(ic_text_buf_adds(&buf, "y") == IC_ENOMEM && strcmp(buf.data, "a42") == 0,
           "a failure is sticky and leaves the text as it was");
    ic_text_buf_release(&buf);
}

static void test_xml(void)
{
    TAP_OK(escapes_to("<script>alert(1)</script> & ]]>", IC_ESCAPE_XML_TEXT,
                      "&lt;script&gt;alert(1)&lt;/script&gt; &amp; ]]&gt;"),
           "XML text: markup, ampersands and ]]> are escaped");
    TAP_OK(escapes_to("q\"'\t\n\r", IC_ESCAPE_XML_TEXT, "q\"'\t\n&#13;"),
           "XML text: quotes, tab and LF stay, CR is a reference");
    TAP_OK(
        escapes_to("\"'<&>\t\n\r", IC_ESCAPE_XML_ATTR, "&quot;&apos;&lt;&amp;&gt;&#9;&#10;&#13;"),
        "XML attribute: quotes and whitespace a parser would normalize are references");
    TAP_OK(
        escapes_to("\x01\x08\x0B\x0C\x1F\x7F", IC_ESCAPE_XML_TEXT, FFFD FFFD FFFD FFFD FFFD FFFD),
        "C0 controls other than tab, LF, CR, and DEL become U+FFFD");
    TAP_OK(escapes_to("\xC2\x85\xC2\x9F\xEF\xBF\xBE\xEF\xBF\xBF\xEF\xB7\x90\xF0\x9F\xBF\xBF",
                      IC_ESCAPE_XML_ATTR, FFFD FFFD FFFD FFFD FFFD FFFD),
           "C1 controls, U+FFFE, U+FFFF and other noncharacters become U+FFFD");
    TAP_OK(escapes_to("\xFF\xED\xA0\x80ok\xE2\x82", IC_ESCAPE_XML_TEXT, FFFD FFFD "ok"),
           "invalid UTF-8 is repaired while escaping");
    TAP_OK(escapes_to("caf\xC3\xA9 \xF0\x9F\x98\x80 \xEF\xBF\xBD", IC_ESCAPE_XML_TEXT,
                      "caf\xC3\xA9 \xF0\x9F\x98\x80 " FFFD),
           "other characters, U+FFFD included, pass unchanged");
}

static void test_html(void)
{
    TAP_OK(escapes_to("<img src=x onerror='alert(1)'>&amp;\"", IC_ESCAPE_HTML,
                      "&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;amp;&quot;"),
           "HTML: tags, entities and both quotes are escaped");
    TAP_OK(escapes_to("a\x1b[31mb\x7f", IC_ESCAPE_HTML, "a" FFFD "[31mb" FFFD),
           "HTML: terminal escapes lose their ESC, DEL is replaced");
}

static void test_markdown(void)
{
    TAP_OK(escapes_to("| a | b |", IC_ESCAPE_MARKDOWN, "\\| a \\| b \\|"),
           "pipes cannot split a table cell");
    TAP_OK(escapes_to("`code` **bold** _em_ ~~del~~", IC_ESCAPE_MARKDOWN,
                      "\\`code\\` \\*\\*bold\\*\\* \\_em\\_ \\~\\~del\\~\\~"),
           "code spans, emphasis and strikethrough are escaped");
    TAP_OK(escapes_to("[x](javascript:alert(1)) ![i](u)", IC_ESCAPE_MARKDOWN,
                      "\\[x\\]\\(javascript\\:alert\\(1\\)\\) \\!\\[i\\]\\(u\\)"),
           "links and images are escaped");
    TAP_OK(escapes_to("<script>&amp;&#124;</script>", IC_ESCAPE_MARKDOWN,
                      "\\<script\\>\\&amp;\\&\\#124;\\</script\\>"),
           "HTML tags and entities render as text");
    TAP_OK(
        escapes_to("# h\n> q\r\n- l\r+ m", IC_ESCAPE_MARKDOWN, "\\# h<br>\\> q<br>\\- l<br>\\+ m"),
        "line breaks become <br>, so #, >, -, + never start a block");
    TAP_OK(escapes_to("www.x.com http://y $x$ :smile: @user", IC_ESCAPE_MARKDOWN,
                      "www\\.x\\.com http\\://y \\$x\\$ \\:smile\\: \\@user"),
           "autolinks, math and emoji shortcodes are broken up");
    TAP_OK(escapes_to("a\\|b\\", IC_ESCAPE_MARKDOWN, "a\\\\\\|b\\\\"),
           "a backslash before a pipe stays a backslash and the pipe stays escaped");
    TAP_OK(escapes_to("t\tab\x01\xFF", IC_ESCAPE_MARKDOWN, "t ab" FFFD FFFD),
           "a tab is a space; controls and invalid bytes become U+FFFD");
    TAP_OK(escapes_to("plain, words; \"quoted\" 'too'? /path", IC_ESCAPE_MARKDOWN,
                      "plain, words; \"quoted\" 'too'? /path"),
           "punctuation that starts no construct is left readable");
}

static void test_plain(void)
{
    TAP_OK(escapes_to("tab\tnl\nesc\x1b<b>", IC_ESCAPE_PLAIN, "tab\tnl\nesc\x1b<b>"),
           "plain keeps controls and markup (its serializer escapes them)");
    TAP_OK(escapes_to("x\xC3(", IC_ESCAPE_PLAIN, "x" FFFD "("), "plain repairs invalid UTF-8");
}

static void test_terminal(void)
{
    TAP_OK(escapes_to("red \x1b[31mRED\x1b[0m", IC_ESCAPE_TERMINAL, "red \\x1b[31mRED\\x1b[0m"),
           "ESC is \\x1b: an ANSI sequence shows as text");
    TAP_OK(escapes_to("a\nb\rc\td\\e", IC_ESCAPE_TERMINAL, "a\\nb\\rc\\td\\\\e"),
           "LF, CR and tab are \\n \\r \\t, and a backslash is doubled (got %s)",
           escaped("a\nb\rc\td\\e", IC_ESCAPE_TERMINAL));
    TAP_OK(escapes_to("\x01\x07\x08\x7f", IC_ESCAPE_TERMINAL, "\\x01\\x07\\x08\\x7f"),
           "other C0 controls and DEL are \\xNN");
    TAP_OK(escapes_to("\xC2\x9B"
                      "2J \xC2\x85",
                      IC_ESCAPE_TERMINAL, "\\u009b2J \\u0085"),
           "C1 controls (the 8-bit CSI, NEL) are \\u00NN");
    TAP_OK(escapes_to("abc\xE2\x80\xAE"
                      "fed\xE2\x81\xA6\xE2\x80\xA8",
                      IC_ESCAPE_TERMINAL, "abc\\u202efed\\u2066\\u2028"),
           "bidirectional controls and line separators are \\uNNNN");
    TAP_OK(escapes_to("caf\xC3\xA9 <b> \xF0\x9F\x98\x80 \xEF\xBF\xBE", IC_ESCAPE_TERMINAL,
                      "caf\xC3\xA9 <b> \xF0\x9F\x98\x80 \xEF\xBF\xBE"),
           "printable text, markup and other characters stay as they are");
    TAP_OK(escapes_to("x\xFF\xED\xA0\x80y", IC_ESCAPE_TERMINAL, "x" FFFD FFFD "y"),
           "invalid UTF-8 and an encoded surrogate are U+FFFD");

    char line[80];
    ic_text_for_terminal(line, sizeof(line), "one\ntwo\x1b[2J");
    TAP_OK(strcmp(line, "one\\ntwo\\x1b[2J") == 0, "for_terminal: escaped into a fixed buffer");
    ic_text_for_terminal(line, sizeof(line), NULL);
    TAP_OK(strcmp(line, "") == 0, "for_terminal: NULL is empty");
    char big[4000];
    memset(big, '\x1b', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ic_text_for_terminal(line, sizeof(line), big);
    bool raw = strchr(line, '\x1b') != NULL;
    TAP_OK(strlen(line) < sizeof(line) && !raw && ends_with(line, "bytes cut]") &&
               strncmp(line, "\\x1b\\x1b", 8) == 0,
           "for_terminal: 4000 ESC bytes fit 80 bytes, escaped, with the marker (%s)", line);
    /* A cut never splits an escape: what precedes the marker is whole \x1b escapes. */
    const char *mark = strstr(line, " " ELLIPSIS);
    TAP_OK(mark && (size_t)(mark - line) % 4 == 0, "for_terminal: the cut falls between escapes");
    char tiny[8];
    ic_text_for_terminal(tiny, sizeof(tiny), "abcdefghijklmnop");
    TAP_OK(strcmp(tiny, "abcdefg") == 0,
           "for_terminal: a buffer too small for the marker is filled");
}

static void test_line_column(void)
{
    const char *text = "{\n  \"a\": 1,\n  \"\xC3\xA9\xC3\xA9\": x\n}";
    size_t line, column;
    ic_text_line_column(text, strlen(text), 0, &line, &column);
    TAP_OK(line == 1 && column == 1, "offset 0 is line 1, column 1");
    const char *x = strchr(text, 'x');
    ic_text_line_column(text, strlen(text), (size_t)(x - text), &line, &column);
    TAP_OK(line == 3 && column == 9, "columns count characters, not bytes (%zu:%zu)", line, column);
    ic_text_line_column(text, strlen(text), strlen(text) + 100, &line, &column);
    TAP_OK(line == 4 && column == 2, "an offset past the end is the end (%zu:%zu)", line, column);
}

/* ic_json_cap_strings: every string of a tree, names included, capped and repaired in place. */
/* A tree of `members` strings (some with characters JSON escapes) and numbers. */
static cJSON *json_sample(int members, int salt)
{
    cJSON *tree = cJSON_CreateObject();
    for (int i = 0; tree && i < members; i++) {
        char key[32], value[64];
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "v\"%d\\\n\t%d", i, salt);
        cJSON_AddStringToObject(tree, key, value);
        cJSON_AddNumberToObject(tree, "n", i * 0.1 + salt);
    }
    return tree;
}

/* ic_json_print says what cJSON's own printing says, however long. */
static bool json_print_matches(const cJSON *tree, bool formatted)
{
    char *expected = formatted ? cJSON_Print(tree) : cJSON_PrintUnformatted(tree);
    size_t len = 0;
    const char *got = ic_json_print(tree, formatted, &len);
    bool same = expected && got && strcmp(expected, got) == 0 && len == strlen(expected);
    cJSON_free(expected);
    return same;
}

struct json_print_thread {
    int salt;
    bool same;
};

static void *json_print_thread_main(void *context)
{
    struct json_print_thread *t = context;
    cJSON *tree = json_sample(50, t->salt);
    char *expected = cJSON_PrintUnformatted(tree);
    t->same = expected != NULL;
    for (int i = 0; i < 2000 && t->same; i++) {
        const char *got = ic_json_print(tree, false, NULL);
        t->same = got && strcmp(got, expected) == 0;
    }
    cJSON_free(expected);
    cJSON_Delete(tree);
    return NULL;
}

static void test_json_print(void)
{
    cJSON *small = json_sample(3, 1), *large = json_sample(4000, 2);
    TAP_OK(json_print_matches(small, false) && json_print_matches(small, true),
           "ic_json_print: a small tree, on one line and formatted, as cJSON prints it");
    TAP_OK(json_print_matches(large, false) && json_print_matches(large, true) &&
               json_print_matches(small, false),
           "ic_json_print: a tree past its buffer's first size grows it, and a small one "
           "printed after it is whole");
    cJSON_Delete(small);
    cJSON_Delete(large);
    /* Each thread has a buffer of its own: two printing at once never see each other's. */
    struct json_print_thread a = {3, false}, b = {4, false};
    pthread_t ta, tb;
    bool started = pthread_create(&ta, NULL, json_print_thread_main, &a) == 0;
    started = pthread_create(&tb, NULL, json_print_thread_main, &b) == 0 && started;
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    TAP_OK(started && a.same && b.same,
           "ic_json_print: two threads printing at once each get their own tree's text");
}

/* Trees parsed, changed, printed and deleted in an arena span come out as cJSON's own, also
 * one larger than the arena (its blocks then come from malloc) and in nested spans. */
static void test_json_arena(void)
{
    ic_json_hooks_install();
    cJSON *large = json_sample(30000, 5); /* outside any span: malloc's, kept throughout */
    char *large_text = cJSON_PrintUnformatted(large);
    bool same = large_text != NULL;
    for (int round = 0; round < 3 && same; round++) {
        ic_json_arena_begin();
        cJSON *copy = cJSON_Parse(large_text); /* past the arena's megabyte */
        ic_json_arena_begin();
        cJSON *small = json_sample(20, round);
        cJSON_AddItemToObject(small, "nested", cJSON_CreateString("inner span"));
        const char *small_text = ic_json_print(small, false, NULL);
        same = same && small_text && strstr(small_text, "inner span") != NULL;
        cJSON_Delete(small);
        ic_json_arena_end();
        const char *copy_text = copy ? ic_json_print(copy, false, NULL) : NULL;
        same = same && copy_text && strcmp(copy_text, large_text) == 0;
        cJSON_Delete(copy);
        ic_json_arena_end();
    }
    const char *after = ic_json_print(large, false, NULL);
    TAP_OK(same && after && strcmp(after, large_text) == 0,
           "ic_json_arena: trees made in nested spans, one past the arena's size, print as "
           "cJSON's own, and a tree made outside the spans is untouched by them");
    cJSON_free(large_text);
    cJSON_Delete(large);
}

static void test_json_cap(void)
{
    size_t len = 1024 * 1024;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        big[i] = "\xC3\xA9\x1bx"[i % 4];
    big[len] = '\0';
    cJSON *tree = cJSON_CreateObject();
    cJSON *notes = cJSON_AddObjectToObject(tree, "notes");
    cJSON_AddStringToObject(notes, "bool", big);
    cJSON_AddStringToObject(notes, big, "a long name");
    cJSON *list = cJSON_AddArrayToObject(tree, "list");
    cJSON_AddItemToArray(list, cJSON_CreateString(big));
    cJSON_AddItemToArray(list, cJSON_CreateString("bad \xFF byte"));
    cJSON_AddStringToObject(tree, "short", "stays");
    cJSON_AddStringToObject(tree, "script", big);
    const char *short_before = cJSON_GetStringValue(cJSON_GetObjectItem(tree, "short"));

    int changed = ic_json_cap_strings(tree, 1000, "script", 4000);
    TAP_OK(changed == 5, "five strings changed (%d)", changed);
    const char *note = cJSON_GetStringValue(cJSON_GetObjectItem(notes, "bool"));
    TAP_OK(note && strlen(note) <= 1000 && ends_with(note, "bytes cut]") &&
               ic_utf8_valid(note, strlen(note)),
           "a 1 MiB value is cut to 1000 bytes with the marker, valid UTF-8");
    const cJSON *named = notes->child->next;
    TAP_OK(named && strlen(named->string) <= 1000 && ends_with(named->string, "bytes cut]") &&
               strcmp(named->valuestring, "a long name") == 0,
           "a 1 MiB member name is cut too, its value kept");
    TAP_OK(strlen(cJSON_GetStringValue(cJSON_GetArrayItem(list, 0))) <= 1000,
           "strings inside arrays are capped");
    TAP_OK(strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(list, 1)), "bad " FFFD " byte") == 0,
           "an invalid byte is repaired though the string is short");
    const char *script = cJSON_GetStringValue(cJSON_GetObjectItem(tree, "script"));
    TAP_OK(script && strlen(script) > 1000 && strlen(script) <= 4000,
           "the long key's value gets the long cap (%zu)", script ? strlen(script) : 0);
    TAP_OK(cJSON_GetStringValue(cJSON_GetObjectItem(tree, "short")) == short_before,
           "a short valid string is left in place, not copied");
    char *printed = cJSON_PrintUnformatted(tree);
    TAP_OK(printed && strlen(printed) < 20000, "the tree prints small (%zu bytes)",
           printed ? strlen(printed) : 0);
    free(printed);
    TAP_OK(ic_json_cap_strings(tree, 1000, "script", 4000) == 0, "capping again changes nothing");
    TAP_OK(ic_json_cap_strings(NULL, 1000, NULL, 0) == 0, "a NULL tree is nothing to cap");
    cJSON_Delete(tree);
    free(big);
}

static void test_caps(void)
{
    size_t len = 3 * 1024 * 1024;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        big[i] = "<&\xC3\xA9\n|"[i % 6];
    big[len] = '\0';
    static const enum ic_text_escape modes[] = {IC_ESCAPE_PLAIN,    IC_ESCAPE_XML_TEXT,
                                                IC_ESCAPE_XML_ATTR, IC_ESCAPE_HTML,
                                                IC_ESCAPE_MARKDOWN, IC_ESCAPE_TERMINAL};
    static const char *const names[] = {"plain", "XML text", "XML attribute",
                                        "HTML",  "Markdown", "terminal"};
    for (int m = 0; m < 6; m++) {
        struct ic_text_buf buf;
        ic_text_buf_init(&buf);
        ic_text_buf_adds(&buf, "prefix ");
        ic_text_buf_add_escaped(&buf, big, len, modes[m], 1000);
        const char *text = buf.data + 7;
        size_t n = buf.len - 7;
        const char *mark = strstr(text, ELLIPSIS);
        bool whole = true;
        if (mark && (modes[m] == IC_ESCAPE_XML_TEXT || modes[m] == IC_ESCAPE_XML_ATTR ||
                     modes[m] == IC_ESCAPE_HTML)) {
            /* Nothing before the marker may end in the middle of an entity. */
            const char *amp = NULL;
            for (const char *p = text; p < mark; p++)
                amp = *p == '&' ? p : *p == ';' ? NULL : amp;
            whole = amp == NULL;
        }
        const char *end = modes[m] == IC_ESCAPE_MARKDOWN ? "bytes cut\\]" : "bytes cut]";
        TAP_OK(n <= 1000 && mark && ends_with(buf.data, end) && ic_utf8_valid(text, n) && whole,
               "%s: 3 MiB capped at 1000 bytes (%zu), whole escapes, the marker at the end",
               names[m], n);
        ic_text_buf_release(&buf);
    }

    struct ic_text_buf buf;
    ic_text_buf_init(&buf);
    ic_text_buf_add_escaped(&buf, big, 100, IC_ESCAPE_PLAIN, 100);
    TAP_OK(buf.len == 100 && !strstr(buf.data, ELLIPSIS), "a text exactly at its cap is whole");
    ic_text_buf_truncate(&buf, 0);
    ic_text_buf_add_escaped(&buf, big, len, IC_ESCAPE_XML_TEXT, 5);
    TAP_OK(buf.len <= IC_TEXT_CAP_MIN && strstr(buf.data, "bytes cut]"),
           "a cap below IC_TEXT_CAP_MIN still leaves room for the marker (%zu)", buf.len);
    ic_text_buf_truncate(&buf, 0);
    ic_text_buf_add_escaped(&buf, big, len, IC_ESCAPE_PLAIN, IC_TEXT_NO_CAP);
    TAP_OK(buf.len == len && ic_utf8_valid(buf.data, buf.len), "IC_TEXT_NO_CAP keeps all 3 MiB");
    ic_text_buf_release(&buf);
    free(big);
}

/* Random bytes through every escape: whatever comes in, what goes out keeps the language's
 * invariants. */
static void test_fuzz(void)
{
    static const char alphabet[] =
        "<>&\"'|`*_[]()#!\\\n\r\t\x01\x1b\x7f\xc2\x85\xe2\x80\xae\xed\xa0\x80\xef"
        "\xbf\xbe\xc3\xa9\xf0\x9f\x98\x80]]>ab ";
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    int bad[6] = {0};
    char input[300];
    for (int round = 0; round < 4000; round++) {
        size_t len = (size_t)(round % 290);
        for (size_t i = 0; i < len; i++) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            input[i] = (state >> 32) % 5 == 0 ? (char)(state >> 8)
                                              : alphabet[(state >> 16) % (sizeof(alphabet) - 1)];
        }
        size_t cap = 64 + (size_t)(round % 200);
        for (int m = 0; m < 6; m++) {
            struct ic_text_buf buf;
            ic_text_buf_init(&buf);
            ic_text_buf_add_escaped(&buf, input, len, (enum ic_text_escape)m, cap);
            const char *s = ic_text_buf_str(&buf);
            bool ok = buf.len <= cap && ic_utf8_valid(s, buf.len);
            if (m == IC_ESCAPE_XML_TEXT || m == IC_ESCAPE_XML_ATTR || m == IC_ESCAPE_HTML) {
                ok = ok && !strstr(s, "]]>") && !strchr(s, '<');
                for (size_t i = 0; i < buf.len; i++)
                    ok = ok && ((unsigned char)s[i] >= 0x20 || s[i] == '\t' || s[i] == '\n' ||
                                (s[i] == '\r' && m == IC_ESCAPE_HTML));
            }
            if (m == IC_ESCAPE_XML_ATTR)
                ok = ok && !strchr(s, '"') && !strchr(s, '\'') && !strchr(s, '\n');
            if (m == IC_ESCAPE_MARKDOWN) {
                ok = ok && !strchr(s, '\n') && !strchr(s, '\r');
                for (size_t i = 0; i < buf.len; i++) {
                    if (strchr("|`*_[]<>&", s[i]) && !(s[i] == '<' && !strncmp(s + i, "<br>", 4)) &&
                        !(s[i] == '>' && i >= 3 && !strncmp(s + i - 3, "<br>", 4))) {
                        size_t slashes = 0;
                        while (slashes < i && s[i - 1 - slashes] == '\\')
                            slashes++;
                        ok = ok && slashes % 2 == 1; /* escaped by its own backslash */
                    }
                }
            }
            if (m == IC_ESCAPE_TERMINAL) {
                /* No byte a terminal acts on; every backslash starts a whole escape. */
                for (size_t i = 0; i < buf.len; i++) {
                    unsigned char ch = (unsigned char)s[i];
                    ok = ok && ch >= 0x20 && ch != 0x7f &&
                         !(ch == 0xC2 && (unsigned char)s[i + 1] <= 0x9F) &&
                         strncmp(s + i, "\xE2\x80\xAE", 3) != 0;
                    if (ch == '\\') {
                        ok = ok && i + 1 < buf.len && strchr("\\ntrxu", s[i + 1]);
                        i++; /* the escaped character, a backslash included, is not a start */
                    }
                }
            }
            if (!ok && bad[m]++ == 0)
                TAP_DIAG("mode %d broke on round %d: %s", m, round, s);
            ic_text_buf_release(&buf);
        }
    }
    static const char *const names[] = {"plain", "XML text", "XML attribute",
                                        "HTML",  "Markdown", "terminal"};
    for (int m = 0; m < 6; m++)
        TAP_OK(bad[m] == 0, "fuzz, %s: 4000 random texts keep the language's invariants (%d bad)",
               names[m], bad[m]);
}

static void test_write_atomic(void)
{
    char dir[] = "/tmp/ic_text_XXXXXX";
    char err[300] = "";
    TAP_OK(mkdtemp(dir) != NULL, "a temporary directory");
    char path[256];
    snprintf(path, sizeof(path), "%s/out.txt", dir);
    TAP_OK(ic_text_write_atomic(path, "one", 3, err, sizeof(err)) == 0, "a file is written");
    TAP_OK(ic_text_write_atomic(path, "two!", 4, err, sizeof(err)) == 0, "and replaced");
    FILE *file = fopen(path, "rb");
    char got[16] = "";
    size_t n = file ? fread(got, 1, sizeof(got) - 1, file) : 0;
    if (file)
        fclose(file);
    TAP_OK(n == 4 && memcmp(got, "two!", 4) == 0, "it holds the last text only");
    char missing[300];
    snprintf(missing, sizeof(missing), "%s/no/such/dir/out.txt", dir);
    TAP_OK(ic_text_write_atomic(missing, "x", 1, err, sizeof(err)) == IC_EIO &&
               strstr(err, "cannot write") != NULL,
           "an unwritable path is IC_EIO with a message (%s)", err);
    unlink(path);
    rmdir(dir);
}

static void test_table_and_grow(void)
{
    static const struct {
        int value;
        const char *name;
    } rows[] = {{10, "ten"}, {0, NULL}, {20, "twenty"}};
    static const char *const names[] = {"cpu", "cuda"};
    TAP_OK(IC_TABLE_FIND(rows, name, "twenty") == 2, "a row is found by its name");
    TAP_OK(IC_TABLE_FIND(rows, name, "eleven") == IC_ENOTFOUND, "a name no row has");
    TAP_OK(IC_TABLE_FIND(rows, name, NULL) == IC_ENOTFOUND, "a NULL name, past a row without one");
    TAP_OK(IC_NAMES_FIND(names, "cuda") == 1, "a plain array of names");

    size_t capacity = 0, count = 0;
    int *items = NULL;
    bool ok = true;
    for (int i = 0; i < 100 && ok; i++) {
        int *grown = ic_grow(items, &capacity, count, sizeof(*items), 4);
        ok = grown != NULL && capacity > count;
        if (ok) {
            items = grown;
            items[count++] = i;
        }
    }
    TAP_OK(ok && count == 100 && capacity == 128 && items[99] == 99 && items[0] == 0,
           "an array grows from 4 by doubling and keeps its items (capacity %zu)", capacity);
    TAP_OK(ic_grow(items, &capacity, 5, sizeof(*items), 4) == items && capacity == 128,
           "with room left it stays where it is");
    free(items);
}

/* The article before every dtype name the tool prints, and before a probe's own spelling. */
static void test_article(void)
{
    static const struct {
        const char *word, *article;
    } words[] = {{"int4", "an"},    {"int8", "an"},     {"int64", "an"}, {"uint4", "a"},
                 {"uint8", "a"},    {"uint64", "a"},    {"bool", "a"},   {"float16", "a"},
                 {"bfloat16", "a"}, {"complex64", "a"}, {"empty", "an"}, {"offset", "an"},
                 {"unnamed", "an"}, {"Int32", "an"},    {"", "a"},       {NULL, "a"}};
    int wrong = 0;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        const char *got = ic_text_article(words[i].word);
        if (strcmp(got, words[i].article) != 0) {
            wrong++;
            TAP_DIAG("%s: got \"%s\", want \"%s\"", words[i].word ? words[i].word : "NULL", got,
                     words[i].article);
        }
    }
    TAP_OK(wrong == 0,
           "\"an int8\", \"a uint8\", \"a bool\", \"an unnamed\": the article by spelling");
}

/* ic_text_decimal: every digit of any 64-bit value, the length returned, nothing after it. */
static void test_decimal(void)
{
    const struct {
        uint64_t value;
        const char *text;
    } rows[] = {{0, "0"},
                {7, "7"},
                {10, "10"},
                {9007199254740991ull, "9007199254740991"},
                {UINT64_MAX, "18446744073709551615"}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char out[21];
        memset(out, 'x', sizeof(out));
        size_t len = ic_text_decimal(out, rows[i].value);
        TAP_OK(len == strlen(rows[i].text) && memcmp(out, rows[i].text, len) == 0 &&
                   (len == 20 || out[len] == 'x'),
               "ic_text_decimal writes %s in %zu bytes", rows[i].text, len);
    }
}

int main(void)
{
    test_article();
    test_decimal();
    test_table_and_grow();
    test_valid();
    test_repair();
    test_repair_in_place();
    test_floor();
    test_marker_and_copy();
    test_fix_formatted();
    test_buf();
    test_xml();
    test_html();
    test_markdown();
    test_plain();
    test_terminal();
    test_line_column();
    test_json_cap();
    test_json_print();
    test_json_arena();
    test_caps();
    test_fuzz();
    test_write_atomic();
    return tap_done();
}
