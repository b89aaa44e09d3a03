/*
 * ic_commands: the subcommands. Each takes the parsed options and returns the process exit
 * status (0, 1 or 2, as `interopcheck --help` documents); main() is the only caller and the
 * only place that exits.
 */
#ifndef IC_COMMANDS_H
#define IC_COMMANDS_H

#include "ic_options.h"

enum {
    IC_EXIT_OK = 0,
    IC_EXIT_FAILURES = 1,
    IC_EXIT_USAGE = 2,
};

int ic_cmd_list(const struct ic_options *opts);
int ic_cmd_run(const struct ic_options *opts);
int ic_cmd_version(void);
int ic_cmd_report(const struct ic_options *opts);
int ic_cmd_diff(const struct ic_options *opts);
int ic_cmd_merge(const struct ic_options *opts);

#endif
