/*
 * interopcheck's entry point: parses the command line, dispatches to a subcommand or to the
 * worker loop, and is the only place the process exits from.
 */
#include <stdio.h>
#include <unistd.h>

#include "ic_commands.h"
#include "ic_options.h"
#include "ic_worker.h"

int main(int argc, char **argv)
{
    struct ic_options opts;
    char err[1024];
    int status;

    if (ic_options_parse(argc, argv, &opts, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        ic_options_release(&opts);
        return IC_EXIT_USAGE;
    }
    switch (opts.command) {
    case IC_COMMAND_HELP:
        ic_options_usage(stdout);
        status = IC_EXIT_OK;
        break;
    case IC_COMMAND_VERSION:
        status = ic_cmd_version();
        break;
    case IC_COMMAND_LIST:
        status = ic_cmd_list(&opts);
        break;
    case IC_COMMAND_REPORT:
        status = ic_cmd_report(&opts);
        break;
    case IC_COMMAND_DIFF:
        status = ic_cmd_diff(&opts);
        break;
    case IC_COMMAND_MERGE:
        status = ic_cmd_merge(&opts);
        break;
    case IC_COMMAND_REPRO:
        status = ic_cmd_repro(&opts);
        break;
    case IC_COMMAND_RULES:
        status = ic_cmd_rules(&opts);
        break;
    case IC_COMMAND_WORKER: {
        struct ic_worker_config config = {
            .fd = opts.worker_fd,
            .events_fd = opts.worker_events_fd,
            .python = opts.python,
            .kit_path = opts.probekit};
        status = ic_worker_main(&config);
        ic_options_release(&opts);
        /* Leave without running the libraries' exit-time destructors (ic_worker.h). */
        _exit(status);
    }
    default:
        status = ic_cmd_run(&opts);
        break;
    }
    ic_options_release(&opts);
    return status;
}
