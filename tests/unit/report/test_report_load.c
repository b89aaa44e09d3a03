/* Unit tests of the report reader (ic_report_load), the one door through which `report`,
 * `diff`, `merge` and `repro` take a report file: strict JSON with the place of an error named
 * as line and column, "schema_version" the exact integer this build reads, and the file's text
 * held to what a run would have written (valid UTF-8, every string capped, over-long reproducers
 * dropped with the reason). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_report.h"
#include "ic_text.h"
#include "tap.h"
#include "test_files.h"

static char tmpdir[] = "/tmp/test_report_load.XXXXXX";

/* Writes `len` bytes to the report file of the temporary directory; returns its path. */
static const char *write_bytes(const char *bytes, size_t len)
{
    return test_write_file(tmpdir, "report.json", bytes, len);
}

/* Loads `text`; the status, the tree in *ret (NULL on failure) and the message in err. */
static int load_text(const char *text, cJSON **ret, char *err, size_t err_size)
{
    const char *path = write_bytes(text, strlen(text));
    *ret = NULL;
    err[0] = '\0';
    return ic_report_load(path, ret, err, err_size);
}

/* A minimal report whose "schema_version" member is `version` as written. */
static int load_version(const char *version, char *err, size_t err_size)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"schema\": \"interopcheck-report\", \"schema_version\": %s, \"cases\": [], "
             "\"summary\": {}}",
             version);
    cJSON *report;
    int rc = load_text(text, &report, err, err_size);
    cJSON_Delete(report);
    return rc;
}

static void refused(const char *text, const char *needle, const char *what)
{
    char err[1024];
    cJSON *report;
    int rc = load_text(text, &report, err, sizeof(err));
    TAP_OK(rc == IC_EINVAL && !report && strstr(err, needle) && strstr(err, tmpdir), "%s (%s)",
           what, err);
    cJSON_Delete(report);
}

static void test_schema_version(void)
{
    char err[1024];
    TAP_OK(load_version("2", err, sizeof(err)) == 0, "version 2 is read (%s)", err);
    TAP_OK(load_version("2.0", err, sizeof(err)) == 0 && load_version("2e0", err, sizeof(err)) == 0,
           "2.0 and 2e0 are the number 2, as the schema's \"const\": 2 says (%s)", err);
    static const struct {
        const char *version, *needle, *what;
    } bad[] = {
        {"1.5", "\"schema_version\" is 1.5, not an integer",
         "a fraction is refused, shown as such"},
        {"2.5", "is 2.5, not an integer", "2.5 is not read as 2 (valueint would truncate it)"},
        {"2.0000001", "is 2.0000001, not an integer", "a near-integer is shown as written"},
        {"\"2\"", "is a string, not a number", "the string \"2\" is refused"},
        {"true", "is a boolean, not a number", "true is refused"},
        {"null", "is null, not a number", "null is refused"},
        {"[2]", "is an array, not a number", "an array is refused"},
        {"3", "has report schema version 3; this interopcheck reads version 2",
         "another integer names both versions"},
        {"1e300", "has report schema version 1e+300", "a huge number is not saturated into range"},
        {"-2", "has report schema version -2", "a negative version is refused"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = load_version(bad[i].version, err, sizeof(err));
        TAP_OK(rc == IC_EINVAL && strstr(err, bad[i].needle), "%s (%s)", bad[i].what, err);
    }
    refused("{\"schema\": \"interopcheck-report\", \"cases\": [], \"summary\": {}}",
            "has no \"schema_version\"", "a report without a version is refused");
}

static void test_syntax(void)
{
    refused("{\n  \"schema\": \"interopcheck-report\",\n  \"cases\": [1, 2,]\n}\n",
            "syntax error at line 3, column 18", "a trailing comma: line and column of the ']'");
    refused("{\"schema\":\n \"caf\xC3\xA9\xC3\xA9\" x}", "line 2, column 10",
            "the column counts characters, not bytes");
    refused("{\"schema\": \"interopcheck-report\", \"schema_version\": 2, \"cases\": [], "
            "\"summary\": {}}\n{}\n",
            "line 2, column 1", "a second value after the report is an error, not ignored");
    refused("[1, 2", "(the end of the file)", "a file cut short says the error is at its end");
    refused("", "line 1, column 1", "an empty file is not JSON");
    refused("this is not JSON\n", "is not JSON", "text is not JSON");
    refused("[1, 2]", "is not an interopcheck report", "JSON that is not an object is no report");

    static const char nul[] = "{\"schema\": \"interopcheck-report\",\n \"x\": \"a\0b\"}";
    char err[1024];
    cJSON *report = NULL;
    const char *path = write_bytes(nul, sizeof(nul) - 1);
    int rc = ic_report_load(path, &report, err, sizeof(err));
    TAP_OK(rc == IC_EINVAL && !report && strstr(err, "a NUL byte at line 2, column 9"),
           "a NUL byte is refused with its line and column (%s)", err);
    rc = ic_report_load("/nonexistent/report.json", &report, err, sizeof(err));
    TAP_OK(rc == IC_EIO && strstr(err, "/nonexistent/report.json"),
           "an unreadable file names itself (%s)", err);
}

/* A report whose case diagnostic is `diagnostic_len` bytes of ESC-laden text, with one invalid
 * byte in a library version, and findings whose reproducers are `short_len` and `long_len`
 * bytes. */
static char *hostile_report(size_t diagnostic_len, size_t short_len, size_t long_len)
{
    size_t size = 6 * diagnostic_len + short_len + long_len + 1024; /* an ESC is 6 bytes */
    char *text = malloc(size);
    char *at = text;
    at += sprintf(at, "{\"schema\": \"interopcheck-report\", \"schema_version\": 2, "
                      "\"environment\": {\"libraries\": [{\"name\": \"x\", \"version\": "
                      "\"1.0\xFF\"}]}, \"cases\": [{\"id\": \"a\", \"diagnostic\": \"");
    for (size_t i = 0; i < diagnostic_len; i++)
        at += sprintf(at, "%s", i % 2 ? "x" : "\\u001b");
    at += sprintf(at, "\"}], \"findings\": [{\"id\": \"short\", \"reproducer\": \"");
    memset(at, 'p', short_len);
    at += short_len;
    at += sprintf(at, "\"}, {\"id\": \"long\", \"reproducer\": \"");
    memset(at, 'q', long_len);
    at += long_len;
    sprintf(at, "\", \"reproducer_error\": null}], \"summary\": {}}");
    return text;
}

static void test_caps(void)
{
    char err[1024];
    cJSON *report = NULL;
    /* The diagnostic is 3.5 MB in the file (each ESC written as \u001b). */
    char *text = hostile_report(1000 * 1000, 20000, IC_TEXT_SCRIPT_CAP + 1);
    int rc = load_text(text, &report, err, sizeof(err));
    free(text);
    TAP_OK(rc == 0 && report, "a report with megabytes of library text loads (%s)", err);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(report, "cases"), 0);
    const char *diagnostic = ic_json_string(c, "diagnostic");
    size_t len = diagnostic ? strlen(diagnostic) : 0;
    TAP_OK(diagnostic && len <= IC_TEXT_FIELD_CAP && len > IC_TEXT_FIELD_CAP - 100 &&
               strstr(diagnostic, "bytes cut]"),
           "a 1 MB diagnostic is capped at IC_TEXT_FIELD_CAP with the marker (%zu bytes)", len);
    const cJSON *libraries = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(report, "environment"), "libraries");
    const char *version = ic_json_string(cJSON_GetArrayItem(libraries, 0), "version");
    TAP_OK(version && strcmp(version, "1.0\xEF\xBF\xBD") == 0,
           "an invalid byte in a short string is repaired to U+FFFD");
    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(report, "findings");
    const char *kept = ic_json_string(cJSON_GetArrayItem(findings, 0), "reproducer");
    TAP_OK(kept && strlen(kept) == 20000,
           "a reproducer over the field cap but within IC_TEXT_SCRIPT_CAP is kept whole");
    const cJSON *dropped = cJSON_GetArrayItem(findings, 1);
    const char *why = ic_json_string(dropped, "reproducer_error");
    TAP_OK(!cJSON_GetObjectItemCaseSensitive(dropped, "reproducer") && why &&
               strstr(why, "more than the 65536 a report keeps"),
           "a longer reproducer is dropped, never cut, and reproducer_error says why (%s)",
           why ? why : "none");
    cJSON_Delete(report);
}

int main(void)
{
    return test_files_main(tmpdir, TAP_TESTS(test_schema_version, test_syntax, test_caps));
}
