/*
 * interopcheck repro REPORT FINDING [--run] [--python PATH] [--timeout SEC]
 *
 * Prints the reproducer of a finding (a standalone Python script a maintainer can paste into
 * their tracker), or with --run runs it with the tested interpreter and says whether the
 * problem still shows. FINDING is a finding id, or the id of a case, which stands for the
 * finding of that case.
 *
 * Exit status: printing, 0 when printed; --run, 0 when the problem still shows (the script
 * said REPRODUCED, or died by a signal for a crash, or hung for a timeout), 1 when it does not
 * (NOT REPRODUCED), 2 when nothing could be judged (no such finding, no reproducer, or the
 * script failed otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ic_commands.h"
#include "ic_error.h"
#include "ic_findings.h"
#include "ic_json.h"
#include "ic_report.h"
#include "ic_session.h"
#include "ic_text.h"
#include "ic_supervisor.h"

extern char **environ;

/* The finding `id` names: a finding's id, or a case whose finding it is. */
static const cJSON *ic_finding_of(const cJSON *report, const char *id)
{
    const cJSON *finding = ic_findings_find(report, id);
    if (finding)
        return finding;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(report, "cases"))
    {
        const char *case_id = ic_json_string(c, "id");
        const char *of = ic_json_string(c, "finding");
        if (case_id && of && strcmp(case_id, id) == 0)
            return ic_findings_find(report, of);
    }
    return NULL;
}

struct ic_script_run {
    int status; /* waitpid status */
    bool timed_out;
    char verdict[512]; /* the script's last REPRODUCED / NOT REPRODUCED line */
};

/* Runs `python script`, passing its output through and keeping its last line. */
static int ic_run_script(const char *python, const char *script, double timeout_s,
                         struct ic_script_run *ret)
{
    int out[2];
    pid_t pid;
    posix_spawn_file_actions_t actions;
    memset(ret, 0, sizeof(*ret));
    if (pipe2(out, O_CLOEXEC) < 0)
        return IC_EIO;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    char *argv[] = {(char *)python, (char *)script, NULL};
    int rc = posix_spawn(&pid, python, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        return IC_EENV;
    }
    char line[512];
    size_t used = 0;
    double deadline = ic_wall_s() + timeout_s;
    for (;;) {
        struct pollfd fd = {.fd = out[0], .events = POLLIN};
        double left = deadline - ic_wall_s();
        if (left <= 0) {
            ret->timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&fd, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        char chunk[4096];
        ssize_t n = read(out[0], chunk, sizeof(chunk));
        if (n <= 0)
            break;
        fwrite(chunk, 1, (size_t)n, stdout);
        for (ssize_t i = 0; i < n; i++) {
            if (chunk[i] == '\n') {
                line[used] = '\0';
                /* A library may print after the verdict (at exit): the verdict is the last
                 * line that gives one, not the last line. */
                if (strncmp(line, "REPRODUCED:", 11) == 0 ||
                    strncmp(line, "NOT REPRODUCED:", 15) == 0)
                    snprintf(ret->verdict, sizeof(ret->verdict), "%s", line);
                used = 0;
            } else if (used + 1 < sizeof(line)) {
                line[used++] = chunk[i];
            }
        }
    }
    fflush(stdout);
    close(out[0]);
    while (waitpid(pid, &ret->status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* 0: the problem still shows; 1: it does not; 2: nothing could be judged. */
static int ic_judge_script(const cJSON *finding, const struct ic_script_run *run)
{
    const cJSON *outcomes = cJSON_GetObjectItemCaseSensitive(finding, "outcomes");
    bool crash = cJSON_GetObjectItemCaseSensitive(outcomes, "crash") != NULL;
    bool timeout = cJSON_GetObjectItemCaseSensitive(outcomes, "timeout") != NULL;
    char name[32];
    if (run->timed_out) {
        printf("%s: the reproducer did not finish\n", timeout ? "REPRODUCED" : "UNJUDGED");
        return timeout ? IC_EXIT_OK : IC_EXIT_USAGE;
    }
    if (WIFSIGNALED(run->status)) {
        printf("%s: the process died with %s\n", crash ? "REPRODUCED" : "UNJUDGED",
               ic_signal_name(WTERMSIG(run->status), name, sizeof(name)));
        return crash ? IC_EXIT_OK : IC_EXIT_USAGE;
    }
    int code = WIFEXITED(run->status) ? WEXITSTATUS(run->status) : -1;
    if (code == 1 && strncmp(run->verdict, "REPRODUCED:", 11) == 0)
        return IC_EXIT_OK;
    if (code == 0 && strncmp(run->verdict, "NOT REPRODUCED:", 15) == 0)
        return IC_EXIT_FAILURES;
    printf("UNJUDGED: the reproducer ended with status %d without its verdict line\n", code);
    return IC_EXIT_USAGE;
}

int ic_cmd_repro(const struct ic_options *opts)
{
    cJSON *report = NULL;
    char err[2048], path[] = "/tmp/interopcheck-repro-XXXXXX.py";
    int status = IC_EXIT_USAGE, fd = -1;

    if (ic_report_read(opts->files[0], &report, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        goto done;
    }
    const cJSON *finding = ic_finding_of(report, opts->files[1]);
    if (!finding) {
        fprintf(stderr,
                "interopcheck: %s has no finding '%s' (the findings are listed in the report's "
                "\"findings\"; a failing case's id works too)\n",
                opts->files[0], opts->files[1]);
        goto done;
    }
    const char *script = ic_json_string(finding, "reproducer");
    if (!script) {
        char why[1200];
        ic_text_for_terminal(why, sizeof(why),
                             ic_json_string_or(finding, "reproducer_error", "none was written"));
        fprintf(stderr, "interopcheck: finding %s has no reproducer: %s\n",
                ic_json_string_or(finding, "id", "?"), why);
        goto done;
    }
    if (!opts->run) {
        fputs(script, stdout);
        status = IC_EXIT_OK;
        goto done;
    }
    const cJSON *python = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(report, "environment"), "python");
    const char *interpreter = opts->python ? opts->python : ic_json_string(python, "executable");
    if (!interpreter) {
        fprintf(stderr, "interopcheck: the report names no Python; give one with --python\n");
        goto done;
    }
    fd = mkstemps(path, 3);
    if (fd < 0 || write(fd, script, strlen(script)) != (ssize_t)strlen(script)) {
        fprintf(stderr, "interopcheck: cannot write the reproducer to %s: %s\n", path,
                strerror(errno));
        goto done;
    }
    close(fd);
    fd = -1;
    struct ic_script_run run;
    if (ic_run_script(interpreter, path, opts->timeout_s, &run) < 0) {
        fprintf(stderr, "interopcheck: cannot run %s\n", interpreter);
    } else {
        status = ic_judge_script(finding, &run);
    }
    unlink(path);

done:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    cJSON_Delete(report);
    return status;
}
