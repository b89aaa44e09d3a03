/*
 * interopcheck's entry point: parses the command line, dispatches to a subcommand or to the
 * worker loop, and is the only place the process exits from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ic_commands.h"
#include "ic_layout.h"
#include "ic_json.h"
#include "ic_options.h"
#include "ic_worker.h"

/* The subcommands that run on the parsed options; run is the default. */
static const struct {
    enum ic_command command;
    int (*run)(const struct ic_options *opts);
} ic_subcommands[] = {
    {IC_COMMAND_LIST, ic_cmd_list},   {IC_COMMAND_REPORT, ic_cmd_report},
    {IC_COMMAND_DIFF, ic_cmd_diff},   {IC_COMMAND_MERGE, ic_cmd_merge},
    {IC_COMMAND_REPRO, ic_cmd_repro}, {IC_COMMAND_RULES, ic_cmd_rules},
    {IC_COMMAND_COMPLETION, ic_cmd_completion},
};

/* A worker never returns here: it leaves without running the libraries' exit-time destructors
 * (ic_worker.h). */
static void ic_run_worker(struct ic_options *opts)
{
    /* The run's --size, which the supervisor passes on (ic_session.c). */
    const char *size = getenv("INTEROPCHECK_SIZE");
    if (size && ic_layout_set_size(strtoll(size, NULL, 10)) < 0) {
        fprintf(stderr, "interopcheck worker: INTEROPCHECK_SIZE=%s is no size\n", size);
        _exit(IC_EXIT_USAGE);
    }
    struct ic_worker_config config = {.fd = opts->worker_fd,
                                      .events_fd = opts->worker_events_fd,
                                      .python = opts->python,
                                      .kit_path = opts->probekit};
    int status = ic_worker_main(&config);
    ic_options_release(opts);
    _exit(status);
}

int main(int argc, char **argv)
{
    struct ic_options opts;
    char err[1024];
    int status = IC_EXIT_OK;

    ic_json_hooks_install(); /* before anything uses cJSON */

    if (ic_options_parse(argc, argv, &opts, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        ic_options_release(&opts);
        return IC_EXIT_USAGE;
    }
    if (opts.command == IC_COMMAND_WORKER)
        ic_run_worker(&opts);
    if (opts.command == IC_COMMAND_HELP) {
        ic_options_usage(stdout);
    } else if (opts.command == IC_COMMAND_VERSION) {
        status = ic_cmd_version();
    } else {
        int (*run)(const struct ic_options *) = ic_cmd_run;
        for (size_t i = 0; i < sizeof(ic_subcommands) / sizeof(ic_subcommands[0]); i++) {
            if (ic_subcommands[i].command == opts.command)
                run = ic_subcommands[i].run;
        }
        status = run(&opts);
    }
    ic_options_release(&opts);
    return status;
}
