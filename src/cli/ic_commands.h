/*
 * ic_commands: the subcommands. Each takes the parsed options and returns the process exit
 * status (below, as `interopcheck --help` documents); main() is the only caller and the
 * only place that exits.
 */
#ifndef IC_COMMANDS_H
#define IC_COMMANDS_H

#include <stdio.h>
#include <string.h>

#include "ic_options.h"
#include "ic_views.h"

/* The exit statuses, as `interopcheck --help` documents them. */
enum {
    IC_EXIT_OK = 0,             /* cases ran and none had an outcome of --fail-on */
    IC_EXIT_FAILURES = 1,       /* a case had an outcome of --fail-on */
    IC_EXIT_USAGE = 2,          /* a usage or environment error: nothing was run */
    IC_EXIT_UNTESTED_LIB = 3,   /* a selected library could not be tested (import raised, or
                                 * named but not installed) */
    IC_EXIT_NOTHING_TESTED = 4, /* no case reached a verdict: none selected, or every case
                                 * was unsupported or an error */
};

/* The views the options ask for, as the report stage takes them. */
static inline struct ic_views_request ic_views_asked(const struct ic_options *opts)
{
    struct ic_views_request views = {.html = opts->html,
                                     .junit = opts->junit,
                                     .junit_cases = opts->junit_cases,
                                     .junit_unsupported = opts->junit_unsupported,
                                     .markdown = opts->markdown,
                                     .markdown_max = opts->markdown_max};
    return views;
}

int ic_cmd_list(const struct ic_options *opts);
int ic_cmd_run(const struct ic_options *opts);
int ic_cmd_version(void);
int ic_cmd_report(const struct ic_options *opts);
int ic_cmd_diff(const struct ic_options *opts);
int ic_cmd_merge(const struct ic_options *opts);
int ic_cmd_repro(const struct ic_options *opts);
int ic_cmd_rules(const struct ic_options *opts);

/* completion [bash|zsh]: prints the shell completion script (ic_options_completion). */
static inline int ic_cmd_completion(const struct ic_options *opts)
{
    ic_options_completion(stdout, opts->nfiles == 1 && strcmp(opts->files[0], "zsh") == 0);
    return fflush(stdout) == 0 ? IC_EXIT_OK : IC_EXIT_USAGE;
}

#endif
