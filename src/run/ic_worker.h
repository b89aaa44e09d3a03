/*
 * ic_worker: the worker process. It embeds the interpreter once, loads probes when asked,
 * and runs cases one after another, streaming a begin and an end message for each.
 *
 * Contract
 * - The worker is the same binary started by the supervisor in worker mode; it talks only
 *   over `fd` (ic_ipc framing and message table), which it makes close-on-exec first thing.
 *   Its stdout and stderr belong to the libraries: the supervisor keeps their tail for crash
 *   reports. A child of the worker that dies by a signal is reported on `events_fd` (two
 *   int32: pid, signal) from a SIGCHLD handler; the worker dies with the supervisor
 *   (PR_SET_PDEATHSIG).
 * - Requests (IC_MESSAGE_LIST): "load" answers "loaded"; "run" loads what is missing (one
 *   "loaded" each), then answers "begin" and, when the case is over, "end" with the result;
 *   "repro" answers "script"; "quit" ends the loop. Every answer carries the request's "seq"
 *   and, for a case, its id. A request that breaks the table ends the worker.
 * - A "run" that says "fork" (an isolated case) runs in a child of the worker, which answers
 *   on the same channel; the child stays for the next such request and goes at any other
 *   request or at a load. A child that dies before its case's end makes the worker answer
 *   "lost" with how it ended; the worker itself goes on with its imports.
 * - The begin message is written before the case touches any library: if the worker dies
 *   after it, the supervisor knows which case killed it.
 * - Returns the process exit status; the caller (main) leaves with _exit so that no library's
 *   exit-time destructor can turn a finished worker into a crash report.
 */
#ifndef IC_WORKER_H
#define IC_WORKER_H

#include <stddef.h>
#include <stdint.h>

struct ic_worker_config {
    int fd;
    int events_fd; /* -1: none */
    const char *python;
    const char *kit_path;
};

int ic_worker_main(const struct ic_worker_config *config);

struct ic_case;
struct ic_result;

/* A probe the foreground runner loads: its name and file. */
struct ic_worker_probe {
    const char *name, *path;
};

/* `--case ID --no-fork`: runs case `c` in this process, as a worker would but with no channel
 * and no supervisor, so that a debugger sees the library's code (gdb --args interopcheck
 * --case ID --no-fork; a crash is the debugger's, and there is no timeout). Embeds the
 * interpreter, loads the kit and the two probes (`consumer` NULL for interopcheck's own), and
 * fills *ret. Returns 0, or negative with err saying what could not be set up. */
int ic_worker_foreground(const struct ic_worker_config *config,
                         const struct ic_worker_probe *producer,
                         const struct ic_worker_probe *consumer, const struct ic_case *c,
                         uint64_t seed, struct ic_result *ret, char *err, size_t err_size);

#endif
