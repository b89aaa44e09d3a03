/* Unit tests of case ids (ic_case), of the outcome and check tables (ic_result) and of a
 * case's JSON text (ic_case_json_text, against cJSON's printing of the same object): ids are
 * stable, readable, round-trip, and refuse anything that would split ambiguously. */
#include <stdlib.h>
#include <string.h>

#include "ic_case.h"
#include "ic_error.h"
#include "ic_result.h"
#include "ic_text.h"
#include "tap.h"

static struct ic_case make_case(void)
{
    struct ic_case c = {0};
    c.protocol = IC_PROTOCOL_DLPACK;
    strcpy(c.producer, "numpy");
    strcpy(c.consumer, "torch");
    c.device = (struct ic_device){IC_KIND_CPU, 0};
    c.dtype = IC_DTYPE_FLOAT32;
    c.layout = IC_LAYOUT_CONTIGUOUS;
    c.variant = IC_VARIANT_NONE;
    return c;
}

static void test_format(void)
{
    char id[IC_CASE_ID_MAX];
    struct ic_case c = make_case();
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == 0 &&
               strcmp(id, "dlpack.numpy.torch.cpu.float32.contiguous") == 0,
           "plain case id (got %s)", id);
    c.variant = IC_VARIANT_DL_COPY;
    strcpy(c.consumer, IC_REFERENCE_CONSUMER);
    c.layout = IC_LAYOUT_FLAT;
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == 0 &&
               strcmp(id, "dlpack.numpy.interopcheck.cpu.float32.flat.copy") == 0,
           "variant id (got %s)", id);
    c = make_case();
    strcpy(c.producer, "my-lib");
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == IC_EINVAL, "a '-' in a name is refused");
    strcpy(c.producer, "numpy.core");
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == IC_EINVAL, "a '.' in a name is refused");
    strcpy(c.producer, "NumPy");
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == IC_EINVAL, "upper case is refused");
    c = make_case();
    TAP_OK(ic_case_format_id(&c, id, 10) == IC_ERANGE, "a too small buffer is IC_ERANGE");
    c.dtype = IC_DTYPE_INVALID;
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == IC_EINVAL, "an invalid dtype is refused");
    c = make_case();
    c.device = (struct ic_device){IC_KIND_CUDA, 1};
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == 0 &&
               strcmp(id, "dlpack.numpy.torch.cuda.float32.contiguous") == 0,
           "the id names the device's kind, not its ordinal (got %s)", id);
    c.device.kind = IC_KIND_COUNT;
    TAP_OK(ic_case_format_id(&c, id, sizeof(id)) == IC_EINVAL, "a device kind outside the table");
}

static void test_parse(void)
{
    struct ic_case c;
    char id[IC_CASE_ID_MAX];
    TAP_OK(ic_case_parse_id("buffer.py_ctypes.mlx.cpu.bool.offset", &c) == 0 &&
               c.protocol == IC_PROTOCOL_BUFFER && strcmp(c.producer, "py_ctypes") == 0 &&
               strcmp(c.consumer, "mlx") == 0 && c.dtype == IC_DTYPE_BOOL &&
               c.layout == IC_LAYOUT_OFFSET && c.variant == IC_VARIANT_NONE,
           "an id parses into its parts");
    TAP_OK(ic_case_parse_id("dlpack.cupy.torch.cuda.float32.flat", &c) == 0 &&
               c.device.kind == IC_KIND_CUDA && c.device.id == 0,
           "the device part parses into a kind, on device 0");
    TAP_OK(ic_case_parse_id("dlpack.cupy.torch.rocm.float32.flat", &c) == IC_EINVAL,
           "a device kind the tool does not know is refused");
    TAP_OK(ic_case_parse_id("array.numpy.interopcheck.cpu.float32.flat.copy", &c) == 0 &&
               c.variant == IC_VARIANT_ARR_COPY,
           "'copy' of the array protocol is ARR_COPY");
    TAP_OK(ic_case_parse_id("dlpack.numpy.interopcheck.cpu.float32.flat.copy", &c) == 0 &&
               c.variant == IC_VARIANT_DL_COPY,
           "'copy' of the dlpack protocol is DL_COPY");

    const char *all[] = {"dlpack_capsule.torch.tvm_ffi.cpu.complex128.unit_dims",
                         "array_struct.numpy.jax.cpu.bfloat16.broadcast",
                         "buffer.numpy.interopcheck.cpu.uint64.reversed.writable",
                         "dlpack.jax.numpy.cpu.int16.scalar.readonly"};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        bool round = ic_case_parse_id(all[i], &c) == 0 &&
                     ic_case_format_id(&c, id, sizeof(id)) == 0 && strcmp(id, all[i]) == 0;
        TAP_OK(round, "round trip of %s", all[i]);
    }

    const char *bad[] = {
        "",
        "dlpack",
        "dlpack.numpy.torch.cpu.float32",                    /* too few parts */
        "dlpack.numpy.torch.cpu.float32.contiguous.copy.x",  /* too many parts */
        "dlpack..torch.cpu.float32.contiguous",              /* empty name */
        "dlpackx.numpy.torch.cpu.float32.contiguous",        /* unknown protocol */
        "dlpack.numpy.torch.cpu.float31.contiguous",         /* unknown dtype */
        "dlpack.numpy.torch.cpu.float32.diagonal",           /* unknown layout */
        "dlpack.numpy.torch.cpu.float32.contiguous.writable", /* a buffer variant on dlpack */
        "dlpack.Numpy.torch.cpu.float32.contiguous",         /* upper case */
        "dlpack.numpy.torch.cpu.float32.contiguous.",        /* trailing dot */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        TAP_OK(ic_case_parse_id(bad[i], &c) == IC_EINVAL, "refuses '%s'", bad[i]);
}

static void test_results(void)
{
    enum ic_outcome outcome;
    TAP_OK(ic_outcome_from_name("timeout", &outcome) == 0 && outcome == IC_OUTCOME_TIMEOUT,
           "outcome names round-trip");
    TAP_OK(ic_outcome_is_failure(IC_OUTCOME_FAIL) && ic_outcome_is_failure(IC_OUTCOME_CRASH) &&
               ic_outcome_is_failure(IC_OUTCOME_TIMEOUT) &&
               !ic_outcome_is_failure(IC_OUTCOME_UNSUPPORTED) &&
               !ic_outcome_is_failure(IC_OUTCOME_ERROR) && !ic_outcome_is_failure(IC_OUTCOME_PASS),
           "fail, crash and timeout fail a run; unsupported and error do not");

    struct ic_result res;
    memset(&res, 0, sizeof(res));
    ic_result_check(&res, IC_CHECK_EXPORT, IC_CHECK_PASS, NULL);
    ic_result_fail(&res, IC_CHECK_IMPORT, IC_RULE_DLPACK_CONSUMER_MAX_VERSION, IC_SIDE_NONE,
                   "no max_version");
    ic_result_fail(&res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_CONSUMER,
                   "3 of 24 differ");
    ic_result_fail(&res, IC_CHECK_STRIDES, IC_RULE_EXCHANGE_ADDRESSES, IC_SIDE_PRODUCER,
                   "later failure");
    ic_result_conclude(&res);
    TAP_OK(res.outcome == IC_OUTCOME_FAIL && res.rule == IC_RULE_EXCHANGE_CONTENTS &&
               res.side == IC_SIDE_CONSUMER && res.severity == IC_CLASS_HARMFUL &&
               strstr(res.diagnostic, "contents: 3 of 24 differ") != NULL,
           "the most severe failed check, then the first, decides outcome, rule, side and "
           "severity (got %s)",
           res.diagnostic);
    TAP_OK(res.checks[IC_CHECK_IMPORT].side == IC_SIDE_CONSUMER &&
               res.checks[IC_CHECK_IMPORT].severity == IC_CLASS_NONCONFORMANT,
           "IC_SIDE_NONE takes the rule's own side and class from the table");

    cJSON *json = ic_result_to_json(&res);
    struct ic_result back;
    TAP_OK(json && ic_result_from_json(json, &back) == 0 && back.outcome == IC_OUTCOME_FAIL &&
               back.rule == IC_RULE_EXCHANGE_CONTENTS && back.side == IC_SIDE_CONSUMER &&
               back.severity == IC_CLASS_HARMFUL &&
               back.checks[IC_CHECK_CONTENTS].status == IC_CHECK_FAIL &&
               back.checks[IC_CHECK_DTYPE].status == IC_CHECK_NOT_RUN &&
               back.checks[IC_CHECK_STRIDES].rule == IC_RULE_EXCHANGE_ADDRESSES &&
               back.checks[IC_CHECK_STRIDES].side == IC_SIDE_PRODUCER,
           "a result survives its JSON form");
    cJSON_Delete(json);

    /* The packed form a run keeps: every field back, at the size of its texts. */
    snprintf(res.request, sizeof(res.request), "__dlpack__(max_version=(1, 0))");
    snprintf(res.documented, sizeof(res.documented), "see the library's notes");
    memset(res.checks[IC_CHECK_LIFETIME].note, 'n', sizeof(res.checks[0].note) - 1);
    res.duration_ms = 1.25;
    struct ic_result_packed packed;
    memset(&packed, 0, sizeof(packed));
    TAP_OK(ic_result_pack(&res, &packed) == 0 && packed.outcome == IC_OUTCOME_FAIL &&
               packed.rule == IC_RULE_EXCHANGE_CONTENTS && packed.side == IC_SIDE_CONSUMER &&
               packed.severity == IC_CLASS_HARMFUL,
           "a packed result keeps outcome, rule, side and severity as fields");
    struct ic_result *unpacked = malloc(sizeof(*unpacked));
    memset(unpacked, 0xa5, sizeof(*unpacked)); /* unpacking writes every byte it compares */
    ic_result_unpack(&packed, unpacked);
    bool same = unpacked->duration_ms == res.duration_ms;
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *a = &res.checks[i], *b = &unpacked->checks[i];
        same = same && a->status == b->status && a->rule == b->rule && a->side == b->side &&
               a->severity == b->severity && strcmp(a->note, b->note) == 0;
    }
    TAP_OK(same && strcmp(unpacked->diagnostic, res.diagnostic) == 0 &&
               strcmp(unpacked->request, res.request) == 0 &&
               strcmp(unpacked->documented, res.documented) == 0 &&
               strcmp(unpacked->exported, "") == 0 && unpacked->outcome == res.outcome,
           "unpacking gives back every check, note (a full one too), text and the duration");
    packed.outcome = IC_OUTCOME_XFAIL; /* what expectations do to a run's packed results */
    ic_result_unpack(&packed, unpacked);
    TAP_OK(unpacked->outcome == IC_OUTCOME_XFAIL, "the packed form's outcome field wins");
    struct ic_result_packed empty;
    memset(&empty, 0, sizeof(empty));
    ic_result_unpack(&empty, unpacked);
    TAP_OK(unpacked->outcome == IC_OUTCOME_PASS && unpacked->diagnostic[0] == '\0' &&
               unpacked->checks[IC_CHECK_EXPORT].status == IC_CHECK_NOT_RUN,
           "a zeroed packed result is an empty one");
    free(unpacked);
    ic_result_packed_release(&packed);
    TAP_OK(packed.blob == NULL, "releasing empties it");

    cJSON *broken = cJSON_Parse("{\"outcome\":\"maybe\"}");
    TAP_OK(ic_result_from_json(broken, &back) == IC_EPROTO, "an unknown outcome is IC_EPROTO");
    cJSON_Delete(broken);
    broken = cJSON_Parse("{\"outcome\":\"pass\",\"checks\":{\"export\":{\"status\":\"great\"}}}");
    TAP_OK(ic_result_from_json(broken, &back) == IC_EPROTO, "an unknown check status is IC_EPROTO");
    cJSON_Delete(broken);
    broken = cJSON_Parse("{\"outcome\":\"fail\",\"rule\":\"dlpack 2.5.8\",\"side\":\"producer\","
                         "\"severity\":\"harmful\"}");
    TAP_OK(ic_result_from_json(broken, &back) == IC_EPROTO,
           "a rule id the table does not hold is IC_EPROTO");
    cJSON_Delete(broken);

    memset(&res, 0, sizeof(res));
    ic_result_check(&res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP, "empty");
    ic_result_conclude(&res);
    TAP_OK(res.outcome == IC_OUTCOME_PASS && res.rule == IC_RULE_NONE, "no failed check is a pass");
}

/* The outcome table is every writer's source: its columns must agree with each other. */
static void test_outcome_table(void)
{
    bool rank_seen[IC_OUTCOME_COUNT] = {false};
    bool consistent = true;
    for (int o = 0; o < IC_OUTCOME_COUNT; o++) {
        const struct ic_outcome_info *info = ic_outcome_info((enum ic_outcome)o);
        if (!info || info->rank < 0 || info->rank >= IC_OUTCOME_COUNT || rank_seen[info->rank])
            consistent = false;
        else
            rank_seen[info->rank] = true;
        /* a failure of the run is never a passed case, and JUnit readers see it fail */
        if (info && info->failing &&
            (info->passed || (strcmp(info->junit, "failure") && strcmp(info->junit, "error"))))
            consistent = false;
        if (info && info->passed && info->junit[0])
            consistent = false;
        if (info && (!info->mark[0] || !info->label[0] || !info->category[0]))
            consistent = false;
    }
    TAP_OK(consistent, "every outcome has one rank of its own, a mark, a label and a colour; "
                       "failures are JUnit failures or errors, passes have no element");
    TAP_OK(ic_outcome_info(IC_OUTCOME_COUNT) == NULL, "no row past the table");

    size_t counts[IC_OUTCOME_COUNT] = {0};
    TAP_OK(ic_outcome_worst(counts) == -1, "no counts: no worst outcome");
    counts[IC_OUTCOME_PASS] = 5;
    counts[IC_OUTCOME_UNSUPPORTED] = 2;
    TAP_OK(ic_outcome_worst(counts) == IC_OUTCOME_UNSUPPORTED, "unsupported is worse than pass");
    counts[IC_OUTCOME_XFAIL] = 1;
    counts[IC_OUTCOME_TIMEOUT] = 1;
    counts[IC_OUTCOME_FAIL] = 3;
    TAP_OK(ic_outcome_worst(counts) == IC_OUTCOME_TIMEOUT, "a timeout ranks above a failure");
    TAP_OK(ic_outcome_failures(counts) == 4, "failures of the run: fail and timeout, not xfail");
}

/* A byte string for a text field: what libraries put in diagnostics and notes, quotes,
 * backslashes, control characters, UTF-8 and bytes that are not UTF-8 among them. */
static void random_text(unsigned *state, char *dst, size_t size)
{
    static const char *const pieces[] = {
        "plain words",  "\"quoted\"", "back\\slash", "\n\t\r", "\x01\x1f",  "\b\f", "caf\xc3\xa9",
        "\xe2\x82\xac", "\xff\xfe",   "\xc3",        "x",      "</script>", "\x7f"};
    size_t len = 0, count = (*state = *state * 1103515245u + 12345u) % 6;
    dst[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        *state = *state * 1103515245u + 12345u;
        const char *piece = pieces[(*state >> 8) % (sizeof(pieces) / sizeof(pieces[0]))];
        size_t n = strlen(piece);
        if (len + n + 1 > size)
            break;
        memcpy(dst + len, piece, n + 1);
        len += n;
    }
}

static unsigned next(unsigned *state, unsigned bound)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) % bound;
}

/* Half the time a rule, a side and a class (any, whether or not they go together). */
static void random_failure(unsigned *state, enum ic_rule *rule, enum ic_side *side,
                           enum ic_severity_class *severity)
{
    if (!next(state, 2))
        return;
    *rule = (enum ic_rule)(1 + next(state, IC_RULE_COUNT - 1));
    *side = (enum ic_side)next(state, IC_SIDE_COUNT);
    *severity = (enum ic_severity_class)next(state, IC_CLASS_COUNT);
}

/* ic_case_json_text writes what cJSON prints of ic_case_to_json, byte for byte, for results of
 * every shape: the stream's lines and the report's cases must read the same. */
static void test_case_json_text(void)
{
    /* No -0: cJSON prints it "-0" before 1.7.16 and "0" since; the text writes 0. */
    static const double durations[] = {
        0.0,    12.0,         1.0, 0.1,  1.0526210013777018,  37.24, 1e300, -3.5,
        1e-300, 2147483647.0, 3e9, -3e9, 0.30000000000000004, 2.07,  0.001, 65.432};
    unsigned state = 12345u;
    int same = 0, cases = 0, results_same = 0;
    char first_diff[300] = "", first_result_diff[300] = "";
    for (int n = 0; n < 3000; n++) {
        struct ic_case c = make_case();
        c.protocol = (enum ic_protocol)next(&state, IC_PROTOCOL_COUNT);
        c.variant = (enum ic_variant)next(&state, IC_VARIANT_COUNT);
        c.layout = (enum ic_layout)next(&state, IC_LAYOUT_COUNT);
        if (next(&state, 4) == 0)
            strcpy(c.consumer, "numpy");
        struct ic_result *res = calloc(1, sizeof(*res));
        if (!res)
            break;
        res->outcome = (enum ic_outcome)next(&state, IC_OUTCOME_COUNT);
        random_failure(&state, &res->rule, &res->side, &res->severity);
        random_text(&state, res->documented, sizeof(res->documented));
        random_text(&state, res->diagnostic, sizeof(res->diagnostic));
        random_text(&state, res->request, sizeof(res->request));
        random_text(&state, res->exported, sizeof(res->exported));
        res->duration_ms =
            next(&state, 3) ? durations[next(&state, 16)] : (double)next(&state, 1u << 30) / 7.0;
        for (int i = 0; i < IC_CHECK_COUNT; i++) {
            struct ic_check_result *check = &res->checks[i];
            check->status = (enum ic_check_status)next(&state, IC_CHECK_STATUS_COUNT);
            random_failure(&state, &check->rule, &check->side, &check->severity);
            random_text(&state, check->note, sizeof(check->note));
        }
        cJSON *json = ic_case_to_json(&c, res);
        char *printed = json ? cJSON_PrintUnformatted(json) : NULL;
        struct ic_text_buf text;
        ic_text_buf_init(&text);
        int rc = ic_case_json_text(&c, res, &text);
        cases++;
        if (printed && rc == 0 && strcmp(printed, ic_text_buf_str(&text)) == 0)
            same++;
        else if (!first_diff[0]) {
            const char *a = printed ? printed : "", *b = ic_text_buf_str(&text);
            size_t at = 0;
            while (a[at] && a[at] == b[at])
                at++;
            size_t from = at > 40 ? at - 40 : 0;
            snprintf(first_diff, sizeof(first_diff),
                     "(rc %d, byte %zu: cJSON ...%.80s; text ...%.80s)", rc, at, a + from,
                     b + from);
        }
        /* The result alone, as a worker sends it. */
        cJSON *result = ic_result_to_json(res);
        char *result_printed = result ? cJSON_PrintUnformatted(result) : NULL;
        ic_text_buf_truncate(&text, 0);
        if (result_printed && ic_result_json_text(res, &text) == 0 &&
            strcmp(result_printed, ic_text_buf_str(&text)) == 0)
            results_same++;
        else if (!first_result_diff[0])
            snprintf(first_result_diff, sizeof(first_result_diff),
                     "(case %d: cJSON %.80s; text %.80s)", n, result_printed ? result_printed : "",
                     ic_text_buf_str(&text));
        cJSON_free(result_printed);
        cJSON_Delete(result);
        ic_text_buf_release(&text);
        cJSON_free(printed);
        cJSON_Delete(json);
        free(res);
    }
    TAP_OK(cases == 3000 && same == cases,
           "the text of a case is cJSON's printing of its object, byte for byte (%d of %d) %s",
           same, cases, first_diff);
    TAP_OK(cases == 3000 && results_same == cases,
           "the text of a result is cJSON's printing of its object, byte for byte (%d of %d) %s",
           results_same, cases, first_result_diff);
}

/* ic_text_json_string escapes what cJSON escapes, byte for byte, wherever the byte to escape
 * falls against the eight-byte words it scans: every string of 0 to 40 bytes with one byte of
 * each kind at each position, and a second one eight bytes further on. */
static void test_json_string(void)
{
    static const unsigned char kinds[] = {0x01, 0x1f, '"',  '\\', '\n', '\t',
                                          0x20, 0x7f, 0x80, 0xc3, 0xff, 'a'};
    int strings = 0, same = 0;
    char first_diff[200] = "";
    for (size_t len = 0; len <= 40; len++) {
        for (size_t at = 0; at < (len ? len : 1); at++) {
            for (size_t k = 0; k < sizeof(kinds); k++) {
                char text[48];
                memset(text, 'x', len);
                text[len] = '\0';
                if (len) {
                    text[at] = (char)kinds[k];
                    if (at + 8 < len)
                        text[at + 8] = (char)kinds[(k + 3) % sizeof(kinds)];
                }
                cJSON *item = cJSON_CreateString(text);
                char *printed = item ? cJSON_PrintUnformatted(item) : NULL;
                struct ic_text_buf out;
                ic_text_buf_init(&out);
                ic_text_json_string(&out, text);
                strings++;
                if (printed && strcmp(printed, ic_text_buf_str(&out)) == 0)
                    same++;
                else if (!first_diff[0])
                    snprintf(first_diff, sizeof(first_diff), "(length %zu, byte 0x%02x at %zu)",
                             len, kinds[k], at);
                ic_text_buf_release(&out);
                cJSON_free(printed);
                cJSON_Delete(item);
            }
        }
    }
    TAP_OK(strings > 0 && same == strings,
           "a JSON string's text is cJSON's, byte for byte, at every offset (%d of %d) %s", same,
           strings, first_diff);
}

/* ic_number_text writes what cJSON prints of a number, byte for byte: whole thousandths (the
 * durations, which it writes by hand) across their range and beyond it, and other doubles. */
static void test_number_text(void)
{
    unsigned state = 777u;
    int same = 0, count = 0;
    char first_diff[160] = "";
    for (int n = 0; n < 200000; n++) {
        double d;
        unsigned kind = next(&state, 4);
        uint64_t big = ((uint64_t)next(&state, 1u << 24) << 24 | next(&state, 1u << 24));
        if (kind == 0) /* a duration: thousandths up to about 2.8e14, past the hand's 1e12 */
            d = (double)(big >> (next(&state, 48))) / 1000.0;
        else if (kind == 1) /* a small one, as most cases take */
            d = (double)next(&state, 100000) / 1000.0;
        else if (kind == 2) /* a negative one */
            d = -(double)next(&state, 1u << 30) / 1000.0;
        else /* not whole thousandths */
            d = (double)big / 7.0e3 + 1e-9;
        cJSON *number = cJSON_CreateNumber(d);
        char *printed = number ? cJSON_PrintUnformatted(number) : NULL;
        char text[IC_NUMBER_TEXT_MAX];
        ic_number_text(d, text);
        count++;
        if (printed && strcmp(printed, text) == 0)
            same++;
        else if (!first_diff[0])
            snprintf(first_diff, sizeof(first_diff), "(%.17g: cJSON %s, ours %s)", d,
                     printed ? printed : "?", text);
        cJSON_free(printed);
        cJSON_Delete(number);
    }
    TAP_OK(count == 200000 && same == count,
           "a number's text is cJSON's printing of it, byte for byte (%d of %d) %s", same, count,
           first_diff);
}

int main(void)
{
    test_format();
    test_parse();
    test_results();
    test_outcome_table();
    test_case_json_text();
    test_json_string();
    test_number_text();
    return tap_done();
}
