/*
 * ic_options: the command line. One table of options, the usage text next to it, and the
 * parsed result.
 *
 * Contract
 * - ic_options_parse fills `struct ic_options` from argv without side effects; it never
 *   exits. A usage error returns IC_EUSAGE with a message in err that names the option and
 *   says what would be valid.
 * - Strings in the result point into argv or into the options' own storage; they live as
 *   long as argv and the struct.
 * - Filters are comma-separated lists, and options may repeat: `--dtype float32,int8
 *   --dtype bool` selects three dtypes.
 */
#ifndef IC_OPTIONS_H
#define IC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A growable list of strings it does not own (it owns the array). */
struct ic_strings {
    const char **items;
    int count;
    int capacity;
};

/* Appends `item`. IC_ENOMEM leaves the list as it was. */
int ic_strings_push(struct ic_strings *list, const char *item);
void ic_strings_release(struct ic_strings *list);

enum ic_command {
    IC_COMMAND_RUN,
    IC_COMMAND_LIST,
    IC_COMMAND_HELP,
    IC_COMMAND_VERSION,
    IC_COMMAND_WORKER,
    IC_COMMAND_REPORT, /* report RUN.json: the HTML, JUnit and Markdown reports of a run */
    IC_COMMAND_DIFF,   /* diff BASE.json NEW.json */
    IC_COMMAND_MERGE,  /* merge A.json B.json ... -o ALL.json */
    IC_COMMAND_REPRO,  /* repro REPORT FINDING [--run] */
    IC_COMMAND_RULES,  /* rules [--format text|markdown|json] */
    IC_COMMAND_COMPLETION, /* completion [bash|zsh]: the shell completion script */
};

struct ic_name_list {
    const char **items; /* count of them, pointing into storage */
    int count;
    int capacity;
    struct ic_strings storage; /* strdup'd option arguments the items point into (owned) */
};

struct ic_options {
    enum ic_command command;
    unsigned char given[512 / 8]; /* bit per option code (getopt's value) seen on the line */
    bool all;
    const char *python; /* NULL: $VIRTUAL_ENV, then the build's interpreter */
    const char **probe_dirs; /* nprobe_dirs of them; the array is owned, the strings are argv's */
    int nprobe_dirs;
    int probe_dirs_capacity;
    const char *output;
    uint64_t seed;
    int64_t size; /* --size: elements of the 1-D layouts; 0: their defaults */
    double timeout_s;
    double import_timeout_s;
    int jobs; /* 0: one per CPU */
    bool json;
    bool quiet;
    bool verbose; /* -v: each case's outcome as it finishes */
    struct ic_name_list producers, consumers, protocols, dtypes, layouts, devices;
    /* Reports and expectations */
    const char *junit;    /* --junit FILE */
    bool junit_cases;     /* --junit-cases: a testcase per case too */
    bool junit_unsupported; /* --junit-unsupported: ... unsupported cases among them */
    bool collect_only;    /* --collect-only: list the selection's case ids, run nothing */
    const char *markdown; /* --markdown FILE */
    size_t markdown_max;  /* --markdown-max BYTES */
    const char *html;     /* --html FILE (default: next to the JSON report) */
    const char **expect; /* --expect FILE, repeatable (nexpect of them; array owned) */
    int nexpect;
    int expect_capacity;
    bool strict;                 /* an xpass fails the run */
    struct ic_name_list fail_on; /* outcomes that make the exit status 1 */
    const char *format;          /* diff: "text" or "markdown"; rules: also "json" */
    bool run;                    /* repro --run */
    const char *resume;          /* --resume REPORT: finish an interrupted run */
    const char *last_failed;     /* --last-failed REPORT: run again the cases that failed */
    const char *case_id;         /* --case ID: that case alone */
    bool no_fork;                /* --no-fork: ... in this process, for a debugger */
    /* Positional arguments of report, diff and merge: report files. */
    const char **files; /* nfiles of them; array owned */
    int nfiles;
    int files_capacity;
    /* worker mode (hidden) */
    int worker_fd;
    int worker_events_fd; /* where the worker reports children killed by a signal */
    const char *probekit;
};

int ic_options_parse(int argc, char **argv, struct ic_options *opts, char *err, size_t err_size);

/* Adds the comma-separated names of `arg` to `list` (copied). IC_ENOMEM. */
int ic_name_list_add(struct ic_name_list *list, const char *arg);

/* Frees what ic_name_list_add copied and empties the list. */
void ic_name_list_release(struct ic_name_list *list);
void ic_options_release(struct ic_options *opts);
/* The bash completion script of these options (zsh: the same, after bashcompinit), made
 * from the option table and the registries' names, as --help is. */
void ic_options_completion(FILE *out, bool zsh);

void ic_options_usage(FILE *out);

#endif
