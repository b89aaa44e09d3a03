/*
 * ic_worker: the worker process. It embeds the interpreter once, loads probes when asked,
 * and runs cases one after another, streaming a begin and an end message for each.
 *
 * Contract
 * - The worker is the same binary started by the supervisor in worker mode; it talks only
 *   over `fd` (ic_ipc framing). Its stdout and stderr belong to the libraries: the
 *   supervisor keeps their tail for crash reports.
 * - Requests: {"op":"load","probe":N,"path":P} answers {"ev":"loaded",...};
 *   {"op":"run","case":ID,"seed":S,"load":[{"probe":N,"path":P},...]} loads what is missing
 *   (one "loaded" each), then answers {"ev":"begin","case":ID} and, when the case is over,
 *   {"ev":"end","case":ID,"result":{...}}; {"op":"quit"} ends the loop.
 * - The begin message is written before the case touches any library: if the worker dies
 *   after it, the supervisor knows which case killed it.
 * - Returns the process exit status; the caller (main) leaves with _exit so that no library's
 *   exit-time destructor can turn a finished worker into a crash report.
 */
#ifndef IC_WORKER_H
#define IC_WORKER_H

struct ic_worker_config {
    int fd;
    const char *python;
    const char *kit_path;
};

int ic_worker_main(const struct ic_worker_config *config);

#endif
