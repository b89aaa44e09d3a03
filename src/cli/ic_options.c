#include "ic_options.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ic_config.h"
#include "ic_paths.h"
#include "ic_device.h"
#include "ic_dtype.h"
#include "ic_error.h"
#include "ic_layout.h"
#include "ic_protocol.h"
#include "ic_result.h"

/* The options that have no short form, once each: X(NAME, name, argument). Their values
 * (OPT_NAME) are above the character range, where the short options' values are. */
#define IC_LONG_ONLY_OPTIONS(X)                                                                    \
    X(PYTHON, "python", required_argument)                                                         \
    X(PROBE_DIR, "probe-dir", required_argument)                                                   \
    X(SEED, "seed", required_argument)                                                             \
    X(SIZE, "size", required_argument)                                                             \
    X(TIMEOUT, "timeout", required_argument)                                                       \
    X(IMPORT_TIMEOUT, "import-timeout", required_argument)                                         \
    X(PRODUCER, "producer", required_argument)                                                     \
    X(CONSUMER, "consumer", required_argument)                                                     \
    X(PROTOCOL, "protocol", required_argument)                                                     \
    X(DTYPE, "dtype", required_argument)                                                           \
    X(LAYOUT, "layout", required_argument)                                                         \
    X(DEVICE, "device", required_argument)                                                         \
    X(JUNIT, "junit", required_argument)                                                           \
    X(MARKDOWN, "markdown", required_argument)                                                     \
    X(HTML, "html", required_argument)                                                             \
    X(MARKDOWN_MAX, "markdown-max", required_argument)                                             \
    X(EXPECT, "expect", required_argument)                                                         \
    X(STRICT, "strict", no_argument)                                                               \
    X(FAIL_ON, "fail-on", required_argument)                                                       \
    X(FORMAT, "format", required_argument)                                                         \
    X(JSON, "json", no_argument)                                                                   \
    X(VERSION, "version", no_argument)                                                             \
    X(WORKER_FD, "worker-fd", required_argument)                                                   \
    X(WORKER_EVENTS_FD, "worker-events-fd", required_argument)                                     \
    X(PROBEKIT, "probekit", required_argument)                                                     \
    X(RUN, "run", no_argument)                                                                     \
    X(RESUME, "resume", required_argument)                                                         \
    X(LAST_FAILED, "last-failed", required_argument)                                               \
    X(JUNIT_CASES, "junit-cases", no_argument)                                                     \
    X(COLLECT_ONLY, "collect-only", no_argument)                                                   \
    X(JUNIT_UNSUPPORTED, "junit-unsupported", no_argument)                                         \
    X(CASE, "case", required_argument)                                                             \
    X(NO_FORK, "no-fork", no_argument)

enum {
    OPT_FIRST_LONG_ONLY = 255, /* the first long-only option is 256 */
#define IC_LONG_ONLY_VALUE(e, name, argument) OPT_##e,
    IC_LONG_ONLY_OPTIONS(IC_LONG_ONLY_VALUE)
#undef IC_LONG_ONLY_VALUE
};

static const struct option ic_long_options[] = {
    {"all", no_argument, NULL, 'a'},
    {"output", required_argument, NULL, 'o'},
    {"jobs", required_argument, NULL, 'j'},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
#define IC_LONG_ONLY_ROW(e, name, argument) {(name), (argument), NULL, OPT_##e},
    IC_LONG_ONLY_OPTIONS(IC_LONG_ONLY_ROW)
#undef IC_LONG_ONLY_ROW
        {NULL, 0, NULL, 0},
};

static const char *ic_usage_protocol(int i)
{
    return ic_protocol_id((enum ic_protocol)i);
}

static const char *ic_usage_dtype(int i)
{
    return ic_dtype_name((enum ic_dtype)(IC_DTYPE_FIRST + i));
}

static const char *ic_usage_layout(int i)
{
    return ic_layout_name((enum ic_layout)i);
}

/* An option's names as --help shows them, from their tables: comma-separated, wrapped to 80
 * columns under the option's description column. */
static void ic_usage_names(FILE *out, const char *option, int count, const char *(*name)(int))
{
    int column = fprintf(out, "  %-21s", option);
    for (int i = 0; i < count; i++) {
        const char *separator = i + 1 < count ? "," : "";
        int width = (int)(strlen(name(i)) + strlen(separator));
        if (i > 0 && column + 1 + width > 80)
            column = fprintf(out, "\n%23s", "") - 1;
        else if (i > 0)
            column += fprintf(out, " ");
        column += fprintf(out, "%s%s", name(i), separator);
    }
    fputc('\n', out);
}

void ic_options_usage(FILE *out)
{
    fputs(
        "usage: interopcheck --all [options]        run every exchange of every library\n"
        "       interopcheck [filters] [options]    run the selected part of the matrix\n"
        "       interopcheck list [--json]          show the libraries and their protocols\n"
        "       interopcheck report RUN.json [--html F] [--junit F] [--markdown F]\n"
        "                                           the dashboard and CI views of a report\n"
        "       interopcheck diff BASE.json NEW.json [--format text|markdown]\n"
        "                                           what changed between two reports\n"
        "       interopcheck merge A.json B.json ... -o ALL.json\n"
        "                                           one report of several environments\n"
        "       interopcheck repro RUN.json FINDING [--run]\n"
        "                                           a finding's reproducer: print it, or run it\n"
        "       interopcheck rules [--format text|markdown|json]\n"
        "                                           the rules every verdict cites\n"
        "       interopcheck completion bash|zsh    shell completion: source <(interopcheck ...)\n"
        "\n"
        "interopcheck imports every installed array library through a probe, exchanges arrays\n"
        "between every pair over every protocol (DLPack, __array_interface__, __array_struct__,\n"
        "the buffer protocol, __array__, the CUDA Array Interface, the Arrow C data interface),\n"
        "on the CPU and on CUDA GPUs, and checks each exchange in C: the export is valid,\n"
        "memory is shared where promised, contents, dtype, shape, strides, device and\n"
        "read-only survive, and deleters run once. A library that crashes or hangs costs one\n"
        "case, never the run.\n"
        "\n"
        "Selecting cases (comma-separated, repeatable; without any, --all is required):\n"
        "  --producer LIB       libraries whose arrays are exported\n"
        "  --consumer LIB       libraries that import them ('interopcheck' is the tool's own\n"
        "                       C consumer, which also checks version negotiation)\n",
        out);
    ic_usage_names(out, "--protocol NAME", IC_PROTOCOL_COUNT, ic_usage_protocol);
    ic_usage_names(out, "--dtype NAME", IC_DTYPE_COUNT, ic_usage_dtype);
    ic_usage_names(out, "--layout NAME", IC_LAYOUT_COUNT, ic_usage_layout);
    fputs(
        "  --device NAME        cpu, cuda (GPU cases need the CUDA driver and a device; without\n"
        "                       them the report says why they did not run)\n"
        "  -a, --all            everything (the default set when no filter is given)\n"
        "\n"
        "Environment:\n"
        "  --python PATH        the Python environment to test: its bin/python, or the\n"
        "                       environment's directory (default: the active virtual\n"
        "                       environment, else the one interopcheck is installed in\n"
        "                       (pip), else the Python it was built with); it must be the\n"
        "                       Python minor interopcheck was built for\n"
        "  --probe-dir DIR      also load probes from DIR (repeatable; also the colon-\n"
        "                       separated INTEROPCHECK_PROBE_PATH); a probe there replaces a\n"
        "                       built-in probe of the same name. See probes/README.md.\n"
        "  INTEROPCHECK_CACHE_DIR  where probes keep compiled code between workers and runs\n"
        "                       (JAX's compilation cache; default $XDG_CACHE_HOME/interopcheck,\n"
        "                       else ~/.cache/interopcheck; empty: no cache)\n"
        "  INTEROPCHECK_LEDGER_DIR  where the crash ledger is kept (default: the cache folder;\n"
        "                       empty: none): the pairs whose cases crashed or hung, which the\n"
        "                       next run with the same library versions runs in forked\n"
        "                       children from its start, so as not to lose a worker and its\n"
        "                       imports to them again. It moves cases, never an outcome.\n"
        "  INTEROPCHECK_COPIES=0  start every worker afresh, importing its libraries,\n"
        "                       instead of as a copy of one that imported them all\n"
        "                       (the default, on the CPU: a restart then costs no imports)\n"
        "\n"
        "Running:\n"
        "  -j, --jobs N         worker processes (default: one per CPU)\n"
        "  --timeout SEC        a case running longer is recorded as timeout (default 60)\n"
        "  --import-timeout SEC importing one library may take this long (default 300)\n"
        "  --seed N             seed of the byte patterns (default 1; the report records it)\n"
        "  --size N             the 1-D layouts (flat, reversed, strided) hold N elements\n"
        "                       instead of 24, 12 and 10, so that cases move real volumes\n"
        "                       (K, M, G: times 1024; e.g. --size 16M --layout flat)\n"
        "  -o, --output FILE    the JSON report (default reports/interopcheck-DATE-TIME.json);\n"
        "                       results also stream to FILE with .jsonl as they finish;\n"
        "                       FILE.json.gz writes it gzip-compressed (any output named\n"
        "                       .gz is, and every reader takes gzip)\n"
        "  -v, --verbose        each case's outcome and id on stdout as it finishes, with the\n"
        "                       rule and the culprit of a failure\n"
        "  --collect-only       list the case ids the selection holds, one a line, and run\n"
        "                       nothing (stderr says how many would run and how many the\n"
        "                       producer cannot make); discovery still imports the libraries\n"
        "  -q, --quiet          no progress and no summary table. Progress goes to stderr:\n"
        "                       one line redrawn in place on a terminal; a plain line\n"
        "                       every 5 s in a CI log, a pipe or a file, and under\n"
        "                       TERM=dumb. interopcheck writes no colour codes, so\n"
        "                       NO_COLOR changes nothing\n"
        "  --last-failed REPORT run again only the cases that failed, crashed, timed out or\n"
        "                       erred in REPORT (a JSON report or its .jsonl stream), with\n"
        "                       its seed, timeout and probe directories, importing only\n"
        "                       their libraries; the new report holds those cases\n"
        "  --case ID            run that case alone (an id of a report, of --collect-only)\n"
        "  --no-fork            ... in this process, with no worker, timeout or report: for\n"
        "                       a debugger (gdb --args interopcheck --case ID --no-fork);\n"
        "                       prints the case's result as the report would hold it\n"
        "  --resume REPORT      run only the cases REPORT lacks (a report a run wrote when it\n"
        "                       was interrupted, or its FILE.jsonl stream after a kill),\n"
        "                       with REPORT's selection and seed, and write the complete\n"
        "                       report (to -o FILE, else over REPORT, or next to the stream)\n"
        "\n"
        "Interrupting: the first Ctrl-C (SIGINT) or SIGTERM stops the run, stops the workers\n"
        "and writes every report and view asked for, marked \"interrupted\": true, with every\n"
        "finished case (exit status 130 for SIGINT, 143 for SIGTERM); a second Ctrl-C leaves\n"
        "at once. `interopcheck report FILE.jsonl` makes the views from a stream.\n"
        "\n"
        "Views of the report (a run writes them next to its JSON; `report` writes them\n"
        "from a JSON report, with or without --expect):\n"
        "  --html FILE          the dashboard: one self-contained page, a matrix per protocol\n"
        "                       and device, filters, each case's checks (default: the JSON\n"
        "                       report's name with .html)\n"
        "  --junit FILE         JUnit XML: a testcase per finding (a crash or a timeout is an\n"
        "                       <error>, any other a <failure> typed by its rule)\n"
        "  --junit-cases        ... and a testcase per case with a verdict (fail is a failure;\n"
        "                       crash, timeout and error are errors; xfail is skipped)\n"
        "  --junit-unsupported  ... unsupported cases too, as skipped with their reason\n"
        "  --markdown FILE      a capped summary for a pull request or a CI step summary\n"
        "  --markdown-max BYTES its cap (default 1000000, under GitHub's 1 MiB step summary;\n"
        "                       65536 fits a pull request comment)\n"
        "\n"
        "Expectations and the exit status:\n"
        "  --expect FILE        an expectations file (repeatable): one entry a line,\n"
        "                       'PATTERN REASON... [LINK]'; a '#' that starts a word starts a\n"
        "                       comment. PATTERN is a case id, or one with * and ? (within a\n"
        "                       part) or ** (any run of whole parts); it matches whole ids,\n"
        "                       never prefixes. A fail, crash or timeout it matches becomes "
        "xfail,\n"
        "                       a pass becomes xpass; the first matching entry wins; entries\n"
        "                       that match no case are warned about\n"
        "  --strict             an xpass (a case expected to fail that passed) fails the run\n"
        "  --fail-on LIST       outcomes that make the exit status 1 (default\n"
        "                       fail,crash,timeout; any of pass fail unsupported crash\n"
        "                       timeout error xfail xpass waived)\n"
        "\n"
        "Comparing and merging reports:\n"
        "  diff BASE NEW        cases regressed, improved, changed, added and removed, with\n"
        "                       both sides' library versions; exit status 1 when one regressed\n"
        "  --format FORMAT      diff's output: text (default) or markdown (a pull request\n"
        "                       comment)\n"
        "  merge A B... -o OUT  the environment becomes a dimension: every case and summary\n"
        "                       cell names the run it came from (CPU and GPU jobs, versions)\n"
        "\n"
        "Findings and reproducers:\n"
        "  repro RUN.json FINDING  print the reproducer of a finding (or of a failing case's\n"
        "                       finding, given the case id): a standalone Python script that\n"
        "                       shows the problem with the libraries involved only\n"
        "  --run                run it with the report's Python instead (or --python PATH);\n"
        "                       --timeout bounds it\n"
        "\n"
        "Outcomes: pass; fail (a rule was broken: the case names the rule, the side that broke\n"
        "it, producer or consumer, and the severity); unsupported (a refusal the spec allows,\n"
        "with its reason); crash and timeout (the worker died or hung in that case; the Python\n"
        "call that was running is named); error (the tool's or the environment's fault, never\n"
        "charged to a library); xfail and xpass (an expected failure that failed, or passed).\n"
        "Severity: harmful (silent wrong values, memory unsafety, a crash, a leak, lost\n"
        "writes), nonconformant (the spec says otherwise but the user gets a clear error or a\n"
        "correct result), documented (the library documents the deviation). Failing cases are\n"
        "grouped into findings: one per culprit library, rule and cause, most severe first.\n"
        "The rules: `interopcheck rules`, or docs/rules.md.\n"
        "\n"
        "Exit status of a run:\n"
        "  0  cases were tested and none had an outcome of --fail-on\n"
        "  1  a case had an outcome of --fail-on (default: it failed, crashed or timed out;\n"
        "     with --strict also xpass)\n"
        "  2  a usage or environment error: nothing was run\n"
        "  3  a selected library could not be tested: its import raised or crashed, or it was\n"
        "     named with --producer/--consumer and is not installed (under --all a library\n"
        "     that is simply not installed is a note)\n"
        "  4  nothing was tested: the selection has no case, or every case was unsupported or\n"
        "     an error\n"
        "3 and 4 win over 1: a run that could not test what was asked never reads as an\n"
        "ordinary failure. diff: 1 when a case regressed. merge and report: 0 when written, 2\n"
        "when not (report never fails because the run had failures). repro --run: 0 when the\n"
        "problem still shows, 1 when it does not, 2 when it cannot be judged.\n",
        out);
}

static int ic_parse_number(const char *text, double min, double max, double *ret)
{
    char *end = NULL;
    errno = 0;
    double value = strtod(text, &end);
    if (errno || !end || *end || end == text || value < min || value > max)
        return IC_EUSAGE;
    *ret = value;
    return 0;
}

/* Appends to a growable array of pointers; IC_ENOMEM leaves it as it was. */
static int ic_array_push(const char ***items, int *count, int *capacity, const char *item)
{
    if (*count == *capacity) {
        int grown = *capacity ? 2 * *capacity : 8;
        const char **more = realloc((void *)*items, (size_t)grown * sizeof(*more));
        if (!more)
            return IC_ENOMEM;
        *items = more;
        *capacity = grown;
    }
    (*items)[(*count)++] = item;
    return 0;
}

int ic_strings_push(struct ic_strings *list, const char *item)
{
    return ic_array_push(&list->items, &list->count, &list->capacity, item);
}

void ic_strings_release(struct ic_strings *list)
{
    free((void *)list->items);
    memset(list, 0, sizeof(*list));
}

int ic_name_list_add(struct ic_name_list *list, const char *arg)
{
    char *copy = strdup(arg);
    if (!copy || ic_strings_push(&list->storage, copy) < 0) {
        free(copy);
        return IC_ENOMEM;
    }
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        if (ic_array_push(&list->items, &list->count, &list->capacity, item) < 0)
            return IC_ENOMEM;
    }
    return 0;
}

/* Options that only store what follows them, or set a flag, or add names to a list: each is
 * one row here, so the parser's switch keeps only the options that check their value. */
static const struct {
    int option;
    size_t text;  /* offsetof a `const char *` member, or 0 */
    size_t flag;  /* offsetof a `bool` member, or 0 */
    size_t names; /* offsetof a `struct ic_name_list` member, or 0 */
} ic_plain_options[] = {
    {OPT_PYTHON, offsetof(struct ic_options, python), 0, 0},
    {'o', offsetof(struct ic_options, output), 0, 0},
    {OPT_JUNIT, offsetof(struct ic_options, junit), 0, 0},
    {OPT_MARKDOWN, offsetof(struct ic_options, markdown), 0, 0},
    {OPT_HTML, offsetof(struct ic_options, html), 0, 0},
    {OPT_PROBEKIT, offsetof(struct ic_options, probekit), 0, 0},
    {OPT_RESUME, offsetof(struct ic_options, resume), 0, 0},
    {OPT_LAST_FAILED, offsetof(struct ic_options, last_failed), 0, 0},
    {OPT_CASE, offsetof(struct ic_options, case_id), 0, 0},
    {OPT_NO_FORK, 0, offsetof(struct ic_options, no_fork), 0},
    {'a', 0, offsetof(struct ic_options, all), 0},
    {OPT_STRICT, 0, offsetof(struct ic_options, strict), 0},
    {OPT_JSON, 0, offsetof(struct ic_options, json), 0},
    {'q', 0, offsetof(struct ic_options, quiet), 0},
    {'v', 0, offsetof(struct ic_options, verbose), 0},
    {OPT_RUN, 0, offsetof(struct ic_options, run), 0},
    {OPT_JUNIT_CASES, 0, offsetof(struct ic_options, junit_cases), 0},
    {OPT_COLLECT_ONLY, 0, offsetof(struct ic_options, collect_only), 0},
    {OPT_JUNIT_UNSUPPORTED, 0, offsetof(struct ic_options, junit_unsupported), 0},
    {OPT_PRODUCER, 0, 0, offsetof(struct ic_options, producers)},
    {OPT_CONSUMER, 0, 0, offsetof(struct ic_options, consumers)},
    {OPT_PROTOCOL, 0, 0, offsetof(struct ic_options, protocols)},
    {OPT_DTYPE, 0, 0, offsetof(struct ic_options, dtypes)},
    {OPT_LAYOUT, 0, 0, offsetof(struct ic_options, layouts)},
    {OPT_DEVICE, 0, 0, offsetof(struct ic_options, devices)},
    {OPT_FAIL_ON, 0, 0, offsetof(struct ic_options, fail_on)},
};

/* Applies a row of ic_plain_options. 1 when `option` has a row, 0 when it has none, or
 * IC_ENOMEM. */
static int ic_apply_plain_option(int option, const char *value, struct ic_options *opts)
{
    char *base = (char *)opts;
    for (size_t i = 0; i < sizeof(ic_plain_options) / sizeof(ic_plain_options[0]); i++) {
        if (ic_plain_options[i].option != option)
            continue;
        if (ic_plain_options[i].text)
            *(const char **)(base + ic_plain_options[i].text) = value;
        else if (ic_plain_options[i].flag)
            *(bool *)(base + ic_plain_options[i].flag) = true;
        else if (ic_name_list_add((struct ic_name_list *)(base + ic_plain_options[i].names),
                                  value) < 0)
            return IC_ENOMEM;
        return 1;
    }
    return 0;
}

static int ic_parse_seed(const char *value, struct ic_options *opts, char *err, size_t err_size)
{
    char *end = NULL;
    errno = 0;
    unsigned long long seed = strtoull(value, &end, 0);
    if (errno || !end || *end || value[0] == '-') {
        snprintf(err, err_size, "--seed takes a non-negative integer, not '%s'", value);
        return IC_EUSAGE;
    }
    opts->seed = seed;
    return 0;
}

/* --size N[K|M|G]: elements of the 1-D layouts. */
static int ic_parse_size(const char *value, int64_t *ret, char *err, size_t err_size)
{
    char *end = NULL;
    errno = 0;
    long long number = strtoll(value, &end, 10);
    int64_t scale = 1;
    if (end && *end && !end[1]) {
        const char *units = "KMG";
        const char *unit = strchr(units, *end);
        if (unit) {
            scale = INT64_C(1) << (10 * (unit - units + 1));
            end++;
        }
    }
    if (errno || !end || *end || end == value || number < 1 ||
        number > IC_LAYOUT_SIZE_MAX / scale) {
        snprintf(err, err_size,
                 "--size takes a number of elements from 1 to 4G (K, M, G: times 1024), not '%s'",
                 value);
        return IC_EUSAGE;
    }
    *ret = number * scale;
    return 0;
}

/* The options whose value is a number in a range. */
static int ic_parse_numeric_option(int option, const char *value, struct ic_options *opts,
                                   char *err, size_t err_size)
{
    double number;
    switch (option) {
    case OPT_SEED:
        return ic_parse_seed(value, opts, err, err_size);
    case OPT_SIZE:
        return ic_parse_size(value, &opts->size, err, err_size);
    case OPT_TIMEOUT:
    case OPT_IMPORT_TIMEOUT:
        if (ic_parse_number(value, 0.1, 86400, &number) < 0) {
            snprintf(err, err_size, "--%s takes seconds between 0.1 and 86400, not '%s'",
                     option == OPT_TIMEOUT ? "timeout" : "import-timeout", value);
            return IC_EUSAGE;
        }
        *(option == OPT_TIMEOUT ? &opts->timeout_s : &opts->import_timeout_s) = number;
        return 0;
    case 'j':
        if (ic_parse_number(value, 1, 1024, &number) < 0 || number != (int)number) {
            snprintf(err, err_size, "-j takes a number of workers from 1 to 1024, not '%s'", value);
            return IC_EUSAGE;
        }
        opts->jobs = (int)number;
        return 0;
    case OPT_MARKDOWN_MAX:
        if (ic_parse_number(value, 4096, 1e9, &number) < 0) {
            snprintf(err, err_size, "--markdown-max takes bytes between 4096 and 1e9, not '%s'",
                     value);
            return IC_EUSAGE;
        }
        opts->markdown_max = (size_t)number;
        return 0;
    default: /* the worker's descriptors: no words for a user, who never passes them */
        if (ic_parse_number(value, 0, 1024, &number) < 0)
            return IC_EUSAGE;
        if (option == OPT_WORKER_FD) {
            opts->worker_fd = (int)number;
            opts->command = IC_COMMAND_WORKER;
        } else {
            opts->worker_events_fd = (int)number;
        }
        return 0;
    }
}

/* One option of getopt_long: 0, 1 when it ends the parse (--help, --version), or IC_EUSAGE
 * with the reason in err. */
static int ic_parse_option(int option, char **argv, struct ic_options *opts, char *err,
                           size_t err_size)
{
    int rc = ic_apply_plain_option(option, optarg, opts);
    switch (rc == 0 ? option : 0) {
    case 0:
        break;
    case OPT_SEED:
    case OPT_SIZE:
    case OPT_TIMEOUT:
    case OPT_IMPORT_TIMEOUT:
    case 'j':
    case OPT_MARKDOWN_MAX:
    case OPT_WORKER_FD:
    case OPT_WORKER_EVENTS_FD:
        return ic_parse_numeric_option(option, optarg, opts, err, err_size);
    case OPT_PROBE_DIR:
        rc = ic_array_push(&opts->probe_dirs, &opts->nprobe_dirs, &opts->probe_dirs_capacity,
                           optarg);
        break;
    case OPT_EXPECT:
        rc = ic_array_push(&opts->expect, &opts->nexpect, &opts->expect_capacity, optarg);
        break;
    case OPT_FORMAT:
        if (strcmp(optarg, "text") != 0 && strcmp(optarg, "markdown") != 0 &&
            strcmp(optarg, "json") != 0) {
            snprintf(err, err_size, "--format takes text, markdown or json, not '%s'", optarg);
            return IC_EUSAGE;
        }
        opts->format = optarg;
        break;
    case 'h':
        opts->command = IC_COMMAND_HELP;
        return 1;
    case OPT_VERSION:
        opts->command = IC_COMMAND_VERSION;
        return 1;
    case ':':
        snprintf(err, err_size, "option '%s' needs a value", argv[optind - 1]);
        return IC_EUSAGE;
    default:
        snprintf(err, err_size, "unknown option '%s' (see interopcheck --help)", argv[optind - 1]);
        return IC_EUSAGE;
    }
    if (rc < 0) {
        snprintf(err, err_size, "out of memory while reading '%s'", argv[optind - 1]);
        return IC_EUSAGE;
    }
    return 0;
}

static const struct {
    const char *word;
    enum ic_command command;
} ic_command_words[] = {
    {"list", IC_COMMAND_LIST},
    {"run", IC_COMMAND_RUN},
    {"help", IC_COMMAND_HELP},
    {"report", IC_COMMAND_REPORT},
    {"diff", IC_COMMAND_DIFF},
    {"merge", IC_COMMAND_MERGE},
    {"repro", IC_COMMAND_REPRO},
    {"rules", IC_COMMAND_RULES},
    {"completion", IC_COMMAND_COMPLETION},
};

/* The command word and the files after it. GNU getopt_long has moved the non-options (the
 * command word, the files) after the options, wherever they were written. */
static int ic_parse_command(int argc, char **argv, struct ic_options *opts, char *err,
                            size_t err_size)
{
    if (optind < argc) {
        const char *word = argv[optind++];
        size_t i = 0, n = sizeof(ic_command_words) / sizeof(ic_command_words[0]);
        while (i < n && strcmp(word, ic_command_words[i].word) != 0)
            i++;
        if (i == n) {
            snprintf(err, err_size, "unknown command '%s': use 'list', or options such as --all",
                     word);
            return IC_EUSAGE;
        }
        opts->command = ic_command_words[i].command;
        if (opts->command == IC_COMMAND_HELP)
            return 1;
    }
    bool takes_files = opts->command == IC_COMMAND_REPORT || opts->command == IC_COMMAND_DIFF ||
                       opts->command == IC_COMMAND_MERGE || opts->command == IC_COMMAND_REPRO ||
                       opts->command == IC_COMMAND_COMPLETION;
    while (takes_files && optind < argc) {
        if (ic_array_push(&opts->files, &opts->nfiles, &opts->files_capacity, argv[optind++]) < 0) {
            snprintf(err, err_size, "out of memory");
            return IC_EUSAGE;
        }
    }
    if (optind < argc) {
        snprintf(err, err_size, "unexpected argument '%s'", argv[optind]);
        return IC_EUSAGE;
    }
    return 0;
}

/* What a file-reading command needs besides its files. */
static int ic_check_command_files(const struct ic_options *opts, char *err, size_t err_size)
{
    const char *why = NULL;
    if (opts->command == IC_COMMAND_REPORT && opts->nfiles != 1)
        why = "report takes one report file: interopcheck report RUN.json";
    else if (opts->command == IC_COMMAND_REPRO && opts->nfiles != 2)
        why = "repro takes a report and a finding: interopcheck repro RUN.json FINDING [--run]";
    else if (opts->command == IC_COMMAND_DIFF && opts->nfiles != 2)
        why = "diff takes two report files: interopcheck diff BASE.json NEW.json";
    else if (opts->command == IC_COMMAND_COMPLETION &&
             (opts->nfiles > 1 || (opts->nfiles == 1 && strcmp(opts->files[0], "bash") != 0 &&
                                    strcmp(opts->files[0], "zsh") != 0)))
        why = "completion takes bash or zsh: source <(interopcheck completion bash)";
    else if (opts->command == IC_COMMAND_MERGE && (opts->nfiles < 2 || !opts->output))
        why = "merge takes two or more report files and -o: interopcheck merge A.json B.json -o "
              "ALL.json";
    if (why) {
        snprintf(err, err_size, "%s", why);
        return IC_EUSAGE;
    }
    return 0;
}

/* The options each command other than a run takes (a run takes every option but these
 * commands' own: --format, --json, --run). An option a command does not read is refused: a
 * CI step that writes `diff -o out.md` must not believe it wrote a file. */
static const struct {
    enum ic_command command;
    const char *word;
    int options[12]; /* 0-terminated */
} ic_command_options[] = {
    {IC_COMMAND_LIST, "list", {OPT_JSON, OPT_PYTHON, OPT_PROBE_DIR, OPT_IMPORT_TIMEOUT, 'q'}},
    {IC_COMMAND_REPORT,
     "report",
     {OPT_HTML, OPT_JUNIT, OPT_JUNIT_CASES, OPT_JUNIT_UNSUPPORTED, OPT_MARKDOWN, OPT_MARKDOWN_MAX,
      OPT_EXPECT, OPT_STRICT, OPT_FAIL_ON}},
    {IC_COMMAND_DIFF, "diff", {OPT_FORMAT}},
    {IC_COMMAND_MERGE, "merge", {'o'}},
    {IC_COMMAND_REPRO, "repro", {OPT_RUN, OPT_PYTHON, OPT_TIMEOUT}},
    {IC_COMMAND_RULES, "rules", {OPT_FORMAT}},
    {IC_COMMAND_COMPLETION, "completion", {0}},
};

static bool ic_option_given(const struct ic_options *opts, int option)
{
    return option >= 0 && option < 512 && (opts->given[option / 8] & (1u << (option % 8)));
}

/* The spelling of option code `option`: "-o", "--format". */
static void ic_option_spelling(int option, char *buf, size_t size)
{
    for (const struct option *o = ic_long_options; o->name; o++) {
        if (o->val == option && option < 256)
            snprintf(buf, size, "-%c/--%s", option, o->name);
        else if (o->val == option)
            snprintf(buf, size, "--%s", o->name);
        if (o->val == option)
            return;
    }
    snprintf(buf, size, "option %d", option);
}

/* An option given to a command that does not read it. */
static int ic_check_command_options(const struct ic_options *opts, char *err, size_t err_size)
{
    static const int not_for_runs[] = {OPT_FORMAT, OPT_JSON};
    for (size_t i = 0; opts->command == IC_COMMAND_RUN && i < 2; i++) {
        if (ic_option_given(opts, not_for_runs[i])) {
            char spelling[64];
            ic_option_spelling(not_for_runs[i], spelling, sizeof(spelling));
            snprintf(err, err_size,
                     "a run does not take %s (it belongs to diff, rules or list; see "
                     "'interopcheck --help')",
                     spelling);
            return IC_EUSAGE;
        }
    }
    for (size_t i = 0; i < sizeof(ic_command_options) / sizeof(ic_command_options[0]); i++) {
        if (ic_command_options[i].command != opts->command)
            continue;
        for (int option = 1; option < 512; option++) {
            if (!ic_option_given(opts, option) || option == 'h')
                continue;
            bool taken = false;
            for (const int *o = ic_command_options[i].options; *o && !taken; o++)
                taken = *o == option;
            if (taken)
                continue;
            char spelling[64];
            ic_option_spelling(option, spelling, sizeof(spelling));
            snprintf(err, err_size,
                     "'%s' does not take %s (see 'interopcheck --help' for what it takes)",
                     ic_command_options[i].word, spelling);
            return IC_EUSAGE;
        }
    }
    return 0;
}

/* Options that belong to another command than the one given. */
static int ic_check_misplaced_options(const struct ic_options *opts, char *err, size_t err_size)
{
    if (opts->command == IC_COMMAND_REPORT && (opts->strict || opts->fail_on.count)) {
        /* report's exit status says whether the views were written, never how the run went;
         * silently accepting these would let a CI step believe it gates on them. */
        snprintf(err, err_size,
                 "report does not take %s: its exit status is 0 when the views are written; gate "
                 "on the run's own exit status, or on 'interopcheck diff'",
                 opts->strict ? "--strict" : "--fail-on");
        return IC_EUSAGE;
    }
    const char *why = NULL;
    if (opts->collect_only && opts->command != IC_COMMAND_RUN)
        why = "--collect-only lists the cases a run would run: give it with a selection";
    else if (opts->collect_only &&
             (opts->output || opts->html || opts->junit || opts->markdown || opts->resume))
        why = "--collect-only writes no report: leave out -o, --html, --junit, --markdown and "
              "--resume";
    else if (opts->junit_unsupported && !opts->junit_cases)
        why = "--junit-unsupported adds unsupported cases to those of --junit-cases: give both";
    else if (opts->verbose && opts->quiet)
        why = "-v and -q ask for opposite things: give one";
    else if (opts->verbose && opts->command != IC_COMMAND_RUN)
        why = "-v shows a run's cases as they finish: give it to a run";
    else if (opts->run && opts->command != IC_COMMAND_REPRO)
        why = "--run belongs to 'interopcheck repro REPORT FINDING --run'";
    else if (opts->format && strcmp(opts->format, "json") == 0 && opts->command != IC_COMMAND_RULES)
        why = "--format json is for 'interopcheck rules'; diff takes text or markdown";
    if (why) {
        snprintf(err, err_size, "%s", why);
        return IC_EUSAGE;
    }
    return 0;
}

/* A run selects cases: --all, filters, or a report to resume, and only one way. */
static int ic_check_selection(const struct ic_options *opts, char *err, size_t err_size)
{
    bool filtered = opts->producers.count || opts->consumers.count || opts->protocols.count ||
                    opts->dtypes.count || opts->layouts.count || opts->devices.count;
    const char *from = opts->resume        ? "--resume"
                       : opts->last_failed ? "--last-failed"
                       : opts->case_id     ? "--case"
                                           : NULL;
    if (!!opts->resume + !!opts->last_failed + !!opts->case_id > 1) {
        snprintf(err, err_size,
                 "--resume, --last-failed and --case each select the cases: give one");
        return IC_EUSAGE;
    }
    if (opts->no_fork && !opts->case_id) {
        snprintf(err, err_size, "--no-fork runs one case in this process: give it with --case ID");
        return IC_EUSAGE;
    }
    if (from && (opts->command != IC_COMMAND_RUN || opts->all || filtered)) {
        snprintf(err, err_size, "%s %s: leave out --all and the selection options", from,
                 opts->case_id ? "names its case" : "takes its selection and seed from REPORT");
        return IC_EUSAGE;
    }
    if (opts->command == IC_COMMAND_RUN && !opts->all && !filtered && !from) {
        snprintf(err, err_size,
                 "nothing selected: run 'interopcheck --all' for the whole matrix, "
                 "or choose cases with --producer, --consumer, --protocol, "
                 "--dtype or --layout");
        return IC_EUSAGE;
    }
    return 0;
}

static void ic_options_defaults(struct ic_options *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->command = IC_COMMAND_RUN;
    opts->seed = 1;
    opts->timeout_s = 60;
    opts->import_timeout_s = 300;
    opts->worker_fd = -1;
    opts->worker_events_fd = -1;
}

int ic_options_parse(int argc, char **argv, struct ic_options *opts, char *err, size_t err_size)
{
    ic_options_defaults(opts);
    optind = 1;
    opterr = 0;
    int option, rc = 0;
    while ((option = getopt_long(argc, argv, ":ao:j:qvh", ic_long_options, NULL)) != -1) {
        if (option > 0 && option < 512)
            opts->given[option / 8] |= (unsigned char)(1u << (option % 8));
        rc = ic_parse_option(option, argv, opts, err, err_size);
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    if (opts->command == IC_COMMAND_WORKER)
        return 0;
    rc = ic_parse_command(argc, argv, opts, err, err_size);
    if (rc == 0)
        rc = ic_check_command_files(opts, err, err_size);
    if (rc == 0)
        rc = ic_check_misplaced_options(opts, err, err_size);
    if (rc == 0)
        rc = ic_check_command_options(opts, err, err_size);
    if (rc == 0)
        rc = ic_check_selection(opts, err, err_size);
    return rc < 0 ? rc : 0;
}

void ic_name_list_release(struct ic_name_list *list)
{
    for (int i = 0; i < list->storage.count; i++)
        free((void *)list->storage.items[i]);
    ic_strings_release(&list->storage);
    free((void *)list->items);
    memset(list, 0, sizeof(*list));
}

void ic_options_release(struct ic_options *opts)
{
    ic_name_list_release(&opts->producers);
    ic_name_list_release(&opts->consumers);
    ic_name_list_release(&opts->protocols);
    ic_name_list_release(&opts->dtypes);
    ic_name_list_release(&opts->layouts);
    ic_name_list_release(&opts->devices);
    ic_name_list_release(&opts->fail_on);
    free((void *)opts->probe_dirs);
    free((void *)opts->expect);
    free((void *)opts->files);
    opts->probe_dirs = opts->expect = opts->files = NULL;
    opts->nprobe_dirs = opts->nexpect = opts->nfiles = 0;
}

/* --- Shell completion --------------------------------------------------------------------- */

/* Options a shell completes with a file name, and options only the supervisor gives. */
static bool ic_option_takes_file(int option)
{
    return option == 'o' || option == OPT_PYTHON || option == OPT_PROBE_DIR ||
           option == OPT_JUNIT || option == OPT_MARKDOWN || option == OPT_HTML ||
           option == OPT_EXPECT || option == OPT_RESUME || option == OPT_LAST_FAILED;
}

static bool ic_option_internal(int option)
{
    return option == OPT_WORKER_FD || option == OPT_WORKER_EVENTS_FD || option == OPT_PROBEKIT;
}

static void ic_completion_words(FILE *out, const char *option, int count, const char *(*name)(int))
{
    fprintf(out, "        %s) words=\"", option);
    for (int i = 0; i < count; i++)
        fprintf(out, "%s%s", i ? " " : "", name(i));
    fputs("\" ;;\n", out);
}

static const char *ic_usage_outcome(int i)
{
    return ic_outcome_name((enum ic_outcome)i);
}

static const char *ic_usage_device(int i)
{
    return ic_device_kind_name((enum ic_device_kind)i);
}

void ic_options_completion(FILE *out, bool zsh)
{
    fputs("# interopcheck's completion, made by `interopcheck completion`: source it from your\n"
          "# shell's start-up file, e.g. source <(interopcheck completion bash)\n",
          out);
    if (zsh)
        fputs("autoload -U +X bashcompinit && bashcompinit\n", out);
    fputs("_interopcheck() {\n"
          "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
          "    local words=\"\" prefix=\"\"\n"
          "    case \"$prev\" in\n",
          out);
    fputs("        ", out);
    int files = 0;
    for (const struct option *o = ic_long_options; o->name; o++) {
        if (!ic_option_takes_file(o->val))
            continue;
        if (o->val < 256)
            fprintf(out, "%s-%c", files++ ? "|" : "", o->val);
        fprintf(out, "%s--%s", files++ ? "|" : "", o->name);
    }
    fputs(")\n            COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", out);
    ic_completion_words(out, "--protocol", IC_PROTOCOL_COUNT, ic_usage_protocol);
    ic_completion_words(out, "--dtype", IC_DTYPE_COUNT, ic_usage_dtype);
    ic_completion_words(out, "--layout", IC_LAYOUT_COUNT, ic_usage_layout);
    ic_completion_words(out, "--device", IC_KIND_COUNT, ic_usage_device);
    ic_completion_words(out, "--fail-on", IC_OUTCOME_COUNT, ic_usage_outcome);
    fputs("        --format) words=\"text markdown json\" ;;\n", out);
    /* Library names: the built-in probes and those of INTEROPCHECK_PROBE_PATH, by file name,
     * without importing anything. */
    fprintf(out,
            "        --producer|--consumer)\n"
            "            local dir f\n"
            "            for dir in %s ${INTEROPCHECK_PROBE_PATH//:/ }; do\n"
            "                for f in \"$dir\"/[a-z]*.py; do\n"
            "                    [ -e \"$f\" ] && f=${f##*/} && words=\"$words ${f%%.py}\"\n"
            "                done\n"
            "            done\n"
            "            [ \"$prev\" = --consumer ] && words=\"$words interopcheck\" ;;\n",
            ic_paths_probe_dir());
    fputs("    esac\n"
          "    if [ -n \"$words\" ]; then\n"
          "        # comma-separated lists: complete the name after the last comma\n"
          "        case \"$cur\" in *,*) prefix=\"${cur%,*},\" ;; esac\n"
          "        COMPREPLY=($(compgen -P \"$prefix\" -W \"$words\" -- \"${cur##*,}\"))\n"
          "        return\n"
          "    fi\n"
          "    case \"$cur\" in\n"
          "        -*) COMPREPLY=($(compgen -W \"",
          out);
    int n = 0;
    for (const struct option *o = ic_long_options; o->name; o++) {
        if (ic_option_internal(o->val))
            continue;
        if (o->val < 256)
            fprintf(out, "%s-%c", n++ ? " " : "", o->val);
        fprintf(out, "%s--%s", n++ ? " " : "", o->name);
    }
    fputs("\" -- \"$cur\")) ;;\n"
          "        *) COMPREPLY=($(compgen -W \"",
          out);
    for (size_t i = 0; i < sizeof(ic_command_words) / sizeof(ic_command_words[0]); i++)
        fprintf(out, "%s%s", i ? " " : "", ic_command_words[i].word);
    fputs("\" -- \"$cur\") $(compgen -f -- \"$cur\")) ;;\n"
          "    esac\n"
          "}\n"
          "complete -o filenames -F _interopcheck interopcheck\n",
          out);
}
