/* Unit tests of expectations files (ic_expect): the wildcard matcher compares whole ids, the
 * parser accepts the documented format and names the file and line of anything else, and
 * applying a set to a report turns failures into xfail and passes into xpass, first entry
 * first, and reports the entries that matched nothing. */
#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_expect.h"
#include "tap.h"
#include "test_files.h"

#define ID         "dlpack.numpy.torch.cpu.float32.contiguous"
#define ID_VARIANT "dlpack.numpy.interopcheck.cpu.float32.flat.copy"

static void test_match(void)
{
    TAP_OK(ic_expect_match(ID, ID), "an id matches itself");
    TAP_OK(!ic_expect_match(ID, "dlpack.numpy.torch.cpu.float32.fortran"),
           "an id does not match another");
    TAP_OK(!ic_expect_match("dlpack.numpy.torch.cpu.float32.contiguou", ID),
           "a prefix of an id does not match it");
    TAP_OK(!ic_expect_match("dlpack.numpy.torch.cpu.float32", ID),
           "a prefix of whole parts does not match");
    TAP_OK(!ic_expect_match(ID, ID ".copy"), "an id does not match its variant");
    TAP_OK(ic_expect_match("dlpack.numpy.*.cpu.float32.contiguous", ID), "* stands for a part");
    TAP_OK(ic_expect_match("dlpack.num*.t*h.cpu.*32.*", ID), "* within parts");
    TAP_OK(ic_expect_match("dlpack.numpy.torch.cpu.float*.contiguous*", ID),
           "* matches an empty run");
    TAP_OK(!ic_expect_match("dlpack.*.cpu.float32.contiguous", ID), "* never crosses a dot");
    TAP_OK(!ic_expect_match("dlpack.numpy.torch.cpu.float32.*", ID_VARIANT),
           "* does not stand for two parts");
    TAP_OK(ic_expect_match("dlpack.numpy.torch.cpu.float??.contiguous", ID), "? is one character");
    TAP_OK(!ic_expect_match("dlpack.numpy.torch.cpu.float?.contiguous", ID),
           "? is exactly one character");
    TAP_OK(!ic_expect_match("dlpack.numpy.torch.cpu?float32.contiguous", ID),
           "? does not match the dot");
    TAP_OK(ic_expect_match("dlpack.**.contiguous", ID), "** spans several parts");
    TAP_OK(ic_expect_match("**", ID) && ic_expect_match("**", ID_VARIANT), "** alone is all");
    TAP_OK(ic_expect_match("dlpack.numpy.torch.cpu.float32.contiguous.**", ID),
           "** matches no part at all");
    TAP_OK(ic_expect_match("dlpack.numpy.interopcheck.**", ID_VARIANT) &&
               ic_expect_match("**.copy", ID_VARIANT) && !ic_expect_match("**.copy", ID),
           "** at either end");
    TAP_OK(ic_expect_match("dlpack.**.float32.**", ID_VARIANT) &&
               ic_expect_match("dlpack.**.float32.**", ID),
           "two ** in one pattern");
    TAP_OK(!ic_expect_match("buffer.**", ID), "** does not change the fixed parts");
    TAP_OK(ic_expect_match("*.**.*.*.*", ID), "* and ** mixed");
    TAP_OK(!ic_expect_match("", ID) && !ic_expect_match(ID, ""), "empty pattern or id");
}

static char tmpdir[] = "/tmp/test_expect.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    return test_write_file(tmpdir, name, text, strlen(text));
}

/* Loads `len` bytes as one file, NUL bytes included; returns the loader's status and leaves
 * the message in err. */
static int load_bytes(const char *bytes, size_t len, struct ic_expectations **ret, char *err,
                      size_t size)
{
    const char *path = test_write_file(tmpdir, "bytes.txt", bytes, len);
    *ret = NULL;
    err[0] = '\0';
    return ic_expect_load(&path, 1, ret, err, size);
}

/* Loads one file; returns the loader's status and leaves the message in err. */
static int load_one(const char *text, struct ic_expectations **ret, char *err, size_t size)
{
    const char *path = write_file("x.txt", text);
    *ret = NULL;
    err[0] = '\0';
    return ic_expect_load(&path, 1, ret, err, size);
}

static void expect_error(const char *text, const char *needle, const char *what)
{
    struct ic_expectations *set;
    char err[1024];
    int rc = load_one(text, &set, err, sizeof(err));
    TAP_OK(rc == IC_EINVAL && strstr(err, needle) != NULL, "%s (%s)", what, err);
    ic_expect_free(set);
}

static const char report_text[] =
    "{\"cases\": ["
    "{\"id\": \"dlpack.numpy.torch.cpu.float32.contiguous\", \"outcome\": \"fail\","
    " \"rule\": \"dlpack.copy_flag\", \"diagnostic\": \"flags\"},"
    "{\"id\": \"dlpack.numpy.torch.cpu.float32.flat\", \"outcome\": \"crash\","
    " \"diagnostic\": \"SIGSEGV\"},"
    "{\"id\": \"dlpack.numpy.torch.cpu.int8.flat\", \"outcome\": \"pass\"},"
    "{\"id\": \"dlpack.numpy.torch.cpu.bfloat16.flat\", \"outcome\": \"unsupported\","
    " \"diagnostic\": \"BufferError\"},"
    "{\"id\": \"dlpack.numpy.torch.cpu.int16.flat\", \"outcome\": \"timeout\","
    " \"diagnostic\": \"60 s\"},"
    "{\"id\": \"buffer.numpy.torch.cpu.int8.flat\", \"outcome\": \"error\","
    " \"diagnostic\": \"probe\"},"
    "{\"id\": \"buffer.numpy.torch.cpu.int16.flat\", \"outcome\": \"fail\", \"rule\": "
    "\"exchange.contents\","
    " \"diagnostic\": \"d\"}"
    "], \"summary\": {}}";

static const cJSON *case_of(const cJSON *report, const char *id)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(report, "cases"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "id")), id) == 0)
            return c;
    }
    return NULL;
}

static const char *field(const cJSON *c, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, key));
}

static const char *expectation_field(const cJSON *c, const char *key)
{
    return field(cJSON_GetObjectItemCaseSensitive(c, "expectation"), key);
}

/* Whether the case `id` of `report` has `outcome` and an expectation that observed `observed`
 * and, when `reason` is not NULL, gives that reason. */
static bool case_expected(const cJSON *report, const char *id, const char *outcome,
                          const char *observed, const char *reason)
{
    const cJSON *c = case_of(report, id);
    return strcmp(field(c, "outcome"), outcome) == 0 &&
           strcmp(expectation_field(c, "observed"), observed) == 0 &&
           (!reason || strcmp(expectation_field(c, "reason"), reason) == 0);
}

/* Whether the case `id` of `report` kept its `outcome` and has no expectation object. */
static bool case_left_alone(const cJSON *report, const char *id, const char *outcome)
{
    const cJSON *c = case_of(report, id);
    return strcmp(field(c, "outcome"), outcome) == 0 &&
           !cJSON_GetObjectItemCaseSensitive(c, "expectation");
}

/* The file must be UTF-8 text: NUL bytes, ill-formed UTF-8 and control characters are errors
 * that name line and column, wherever on the line they are. */
static void test_text_errors(void)
{
    struct ic_expectations *set;
    char err[1024];
    static const char nul_line[] = "# ok\n" ID " a reason\0 and a hidden rest\n";
    int rc = load_bytes(nul_line, sizeof(nul_line) - 1, &set, err, sizeof(err));
    TAP_OK(rc == IC_EINVAL && strstr(err, "bytes.txt:2:") && strstr(err, "NUL byte at column 51"),
           "a NUL byte is an error naming line and column (%s)", err);
    ic_expect_free(set);
    static const char utf16[] = "\xFF\xFE"
                                "d\0l\0p\0";
    rc = load_bytes(utf16, sizeof(utf16) - 1, &set, err, sizeof(err));
    TAP_OK(rc == IC_EINVAL && strstr(err, "bytes.txt:1:"),
           "a UTF-16 file is refused at its first line (%s)", err);
    ic_expect_free(set);

    expect_error("\n" ID " caf\xC3\xA9 \xC0\xAF\n", "x.txt:2: the byte 0xc0 at column 48",
                 "an overlong form is not UTF-8, and the column counts characters");
    expect_error(ID " \xED\xA0\x80 surrogate\n", "is not valid UTF-8",
                 "an encoded surrogate is not UTF-8");
    expect_error(ID " cut \xE2\x82\n", "is not valid UTF-8", "a character cut at the line end");
    expect_error(ID " ok # comment \xFF\n", "is not valid UTF-8",
                 "a comment is text too: invalid UTF-8 there is an error");
    expect_error(ID " reason \x1b[31m red\n", "control character (U+001B) at column 50",
                 "ESC is a control character, with its column");
    expect_error(ID " reason \x7f\n", "U+007F", "DEL is a control character");
    expect_error(ID " reason \xC2\x9B"
                    "31m\n",
                 "U+009B", "a C1 control (CSI) is refused");
    expect_error(ID " reason\rmore\n", "U+000D", "a CR inside a line is refused");

    rc = load_one("\xEF\xBB\xBF" ID " with a byte order mark\r\n", &set, err, sizeof(err));
    TAP_OK(rc == 0, "a byte order mark at the start and CRLF line ends are accepted (%s)", err);
    ic_expect_free(set);
    rc = load_one(ID " caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x90\x8D\n", &set, err, sizeof(err));
    TAP_OK(rc == 0, "a reason in any language loads (%s)", err);
    ic_expect_free(set);
}

static void test_parse(void)
{
    struct ic_expectations *set;
    char err[1024];
    char unmatched[1024];

    int rc = load_one("# known failures of torch\n"
                      "\n"
                      "   \t  \n" ID "   torch ignores  the flag   # a comment\n"
                      "dlpack.**.int8.*\tno int8  https://example.org/issues/1#c2\n"
                      "dlpack.numpy.*.cpu.float32.flat http://example.org/a reason, then a link "
                      "http://example.org/b\n",
                      &set, err, sizeof(err));
    TAP_OK(rc == 0, "a file with comments, blank lines, tabs and links loads");
    if (rc < 0)
        TAP_DIAG("%s", err);
    cJSON *report = cJSON_Parse(report_text);
    int changed = rc == 0 ? ic_expect_apply(set, report, unmatched, sizeof(unmatched)) : -1;
    const cJSON *c = case_of(report, ID);
    TAP_OK(changed == 3, "three cases changed (%d)", changed);
    TAP_OK(c && strcmp(expectation_field(c, "reason"), "torch ignores  the flag") == 0,
           "the reason is the rest of the line, inner spacing kept, comment and trailing "
           "blanks cut (got '%s')",
           c ? expectation_field(c, "reason") : "");
    TAP_OK(c && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(c, "expectation"), "link")),
           "no link: link is null");
    c = case_of(report, "dlpack.numpy.torch.cpu.int8.flat");
    TAP_OK(c && strcmp(expectation_field(c, "link"), "https://example.org/issues/1#c2") == 0 &&
               strcmp(expectation_field(c, "reason"), "no int8") == 0,
           "the last word is the link, its #fragment kept");
    c = case_of(report, "dlpack.numpy.torch.cpu.float32.flat");
    TAP_OK(c && strcmp(expectation_field(c, "link"), "http://example.org/b") == 0 &&
               strcmp(expectation_field(c, "reason"), "http://example.org/a reason, then a link") ==
                   0,
           "a link that is not the last word stays in the reason");
    TAP_OK(unmatched[0] == '\0', "every entry matched");
    cJSON_Delete(report);
    ic_expect_free(set);

    rc = load_one("", &set, err, sizeof(err));
    TAP_OK(rc == 0 && set, "an empty file is an empty set");
    ic_expect_free(set);

    expect_error("# ok\n" ID "\n",
                 "x.txt:2:", "a pattern without a reason is refused, with file:line");
    expect_error(ID " https://example.org/1\n", "needs a reason",
                 "a pattern with only a link has no reason");
    expect_error("\n\ndlpack.numpy.torch reason\n", "x.txt:3:", "a prefix pattern is refused");
    expect_error("dlpack.numpy.torch reason\n", "never prefixes",
                 "... and the message says patterns match whole ids");
    expect_error("dlpack.numpy.torch.cpu.float32.contiguous.copy.extra reason\n", "8 parts",
                 "too many parts");
    expect_error("dlpack.NumPy.torch.cpu.float32.contiguous reason\n", "'N'", "upper case");
    expect_error("dlpack..torch.cpu.float32.contiguous.copy reason\n", "empty part",
                 "an empty part");
    expect_error("dlpack.num**.torch.cpu.float32.contiguous reason\n", "whole part",
                 "** inside a part");
    expect_error("dlpack.numpy.torch.cpu.float32.[ab] reason\n", "'['", "brackets are no wildcard");
    expect_error(ID " bad \x01 byte\n", "control character", "a control character");
    expect_error(ID " bad \xff byte\n", "UTF-8", "invalid UTF-8");
    test_text_errors();
    TAP_OK(ic_expect_load((const char *[]){"/nonexistent/x.txt"}, 1, &set, err, sizeof(err)) ==
                   IC_EIO &&
               strstr(err, "/nonexistent/x.txt"),
           "an unreadable file names itself (%s)", err);
}

static void test_apply(void)
{
    struct ic_expectations *set = NULL;
    char err[1024], unmatched[1024];
    const char *paths[2];
    paths[0] = write_file("a.txt", "# first file\n"
                                   "dlpack.numpy.torch.cpu.float32.* first entry\n"
                                   "dlpack.numpy.torch.cpu.*.flat second entry\n");
    paths[1] = write_file("b.txt", "**.int8.flat int8 everywhere https://example.org/int8\n"
                                   "buffer.**.int16.* a buffer failure\n"
                                   "array.**  stale: nothing matches\n"
                                   "dlpack.numpy.torch.cpu.float32.contiguous shadowed, still "
                                   "matching\n");
    int rc = ic_expect_load(paths, 2, &set, err, sizeof(err));
    TAP_OK(rc == 0, "two files load as one set");
    if (rc < 0) {
        TAP_DIAG("%s", err);
        return;
    }
    cJSON *report = cJSON_Parse(report_text);
    int changed = ic_expect_apply(set, report, unmatched, sizeof(unmatched));
    TAP_OK(changed == 5, "five cases changed (%d)", changed);

    TAP_OK(case_expected(report, ID, "xfail", "fail", NULL), "fail -> xfail, observed fail");
    const cJSON *c = case_of(report, ID);
    TAP_OK(strcmp(expectation_field(c, "pattern"), "dlpack.numpy.torch.cpu.float32.*") == 0 &&
               strcmp(expectation_field(c, "reason"), "first entry") == 0,
           "the first matching entry in file order wins");
    TAP_OK(strcmp(field(c, "rule"), "dlpack.copy_flag") == 0 &&
               strcmp(field(c, "diagnostic"), "flags") == 0,
           "rule and diagnostic stay");
    TAP_OK(case_expected(report, "dlpack.numpy.torch.cpu.float32.flat", "xfail", "crash",
                         "first entry"),
           "crash -> xfail, observed crash, first entry");
    TAP_OK(case_expected(report, "dlpack.numpy.torch.cpu.int16.flat", "xfail", "timeout", NULL),
           "timeout -> xfail");
    TAP_OK(
        case_expected(report, "dlpack.numpy.torch.cpu.int8.flat", "xpass", "pass", "second entry"),
        "pass -> xpass, by the earlier of two matching entries");
    TAP_OK(case_left_alone(report, "dlpack.numpy.torch.cpu.bfloat16.flat", "unsupported"),
           "unsupported is left alone, without an expectation object");
    TAP_OK(case_left_alone(report, "buffer.numpy.torch.cpu.int8.flat", "error"),
           "error is left alone");
    c = case_of(report, "buffer.numpy.torch.cpu.int16.flat");
    TAP_OK(strcmp(field(c, "outcome"), "xfail") == 0 &&
               strcmp(expectation_field(c, "reason"), "a buffer failure") == 0 &&
               strstr(unmatched, "b.txt:1:") == NULL,
           "an entry of the second file applies");

    char expected[600];
    snprintf(expected, sizeof(expected), "%s:3: array.**\n", paths[1]);
    TAP_OK(strcmp(unmatched, expected) == 0,
           "only the entry that matches no case is reported, as FILE:LINE: PATTERN");
    if (strcmp(unmatched, expected) != 0)
        TAP_DIAG("got: %s", unmatched);

    int again = ic_expect_apply(set, report, NULL, 0);
    TAP_OK(again == 0, "applying twice changes nothing more (%d)", again);

    char small[8] = "junk";
    ic_expect_apply(set, report, small, sizeof(small));
    TAP_OK(small[0] == '\0', "a buffer too small for a line gets no partial line");

    cJSON *no_cases = cJSON_Parse("{\"summary\": {}}");
    TAP_OK(ic_expect_apply(set, no_cases, NULL, 0) == IC_EINVAL, "a tree without cases: EINVAL");
    cJSON_Delete(no_cases);
    cJSON_Delete(report);
    ic_expect_free(set);
}

int main(void)
{
    return test_files_main(tmpdir, TAP_TESTS(test_match, test_parse, test_apply));
}
