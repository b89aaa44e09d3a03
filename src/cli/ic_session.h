/*
 * ic_session: the discover stage as the commands use it. It chooses the Python
 * environment, checks it, finds the probe directories, scans them, and loads the libraries
 * a command needs through the worker pool.
 *
 * Contract
 * - ic_session_open only reads the environment and the file system; it starts no worker. A
 *   failure leaves a message in err that says what to do, and the session closed.
 * - The interpreter is, in order: --python (a bin/python, or an environment directory), the
 *   active virtual environment ($VIRTUAL_ENV), the environment this program is installed in
 *   (an installed interopcheck with a python3 beside it: pip puts it in the environment's
 *   bin/), the Python interopcheck was built with.
 * - Probe directories are, in order: the built-in one, each directory of
 *   $INTEROPCHECK_PROBE_PATH, each --probe-dir; later ones override earlier ones.
 * - Devices: the CPU always; CUDA when the driver module (ic_gpu) is ready, otherwise the
 *   reason it is not, which GPU cases and `interopcheck list` report.
 * - The session owns the catalog and the pool; ic_session_close releases both.
 */
#ifndef IC_SESSION_H
#define IC_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ic_catalog.h"
#include "ic_options.h"
#include "ic_report.h"
#include "ic_supervisor.h"

/* How a long run shows it is alive, on stderr. */
enum ic_progress_mode {
    IC_PROGRESS_NONE,  /* -q */
    IC_PROGRESS_LIVE,  /* a terminal that takes escapes: one line, redrawn in place */
    IC_PROGRESS_LINES, /* a CI log, a file, TERM=dumb: a plain line every few seconds */
};

/* Seconds between two progress lines written as plain lines. */
#define IC_PROGRESS_LINE_INTERVAL_S 5.0

struct ic_session {
    const struct ic_options *opts;
    char python[4096];
    char python_version[32];
    char self_exe[4096];
    char **dirs; /* ndirs probe directories, resolved (owned) */
    int ndirs;
    int dirs_capacity;
    int jobs;
    enum ic_progress_mode progress; /* how ic_session_status shows progress on stderr */
    double last_status;             /* when it last did, on ic_wall_s's clock */
    struct ic_catalog catalog;
    struct ic_pool *pool;
    struct ic_devices devices; /* the CPU, and the GPU when the CUDA driver is ready */
    /* Called by discovery before it asks for an import and while the import runs, once a
     * library is imported (NULL: never): the run starts cases there (ic_early.h). */
    void (*between)(void *context, const struct ic_library *lib, enum ic_discover_step step);
    void *between_context;
};

int ic_session_open(struct ic_session *session, const struct ic_options *opts, char *err,
                    size_t err_size);

/* Seconds on a monotonic clock: what the command's phases are timed with. */
double ic_wall_s(void);

/* Shows where a long step stands (printf-formatted, no newline): redrawn in place on a
 * terminal (at most ten times a second), a plain line "interopcheck: ..." every
 * IC_PROGRESS_LINE_INTERVAL_S seconds elsewhere, nothing with -q; `force` shows it now. */
void ic_session_status(struct ic_session *session, bool force, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether ic_session_status would show a line now (the same rule, without formatting one). */
bool ic_session_status_due(const struct ic_session *session, bool force);

/* Clears a status line redrawn in place, before other output. */
void ic_session_status_clear(struct ic_session *session);

/* Loads the libraries whose catalog index is in `wanted`, with a progress line on a
 * terminal; `prewarm` when cases follow (ic_pool_discover). */
int ic_session_discover(struct ic_session *session, const struct ic_libset *wanted, bool prewarm);

void ic_session_close(struct ic_session *session);

/* The "tool" object of reports: version and build facts. */
cJSON *ic_session_tool_json(void);

/* The "python" object of reports: executable and version. */
cJSON *ic_session_python_json(const struct ic_session *session);

#endif
