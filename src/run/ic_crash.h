/*
 * ic_crash: where a worker died, read from the Python traceback it left behind.
 *
 * Contract
 * - Workers run with faulthandler enabled, so a fatal signal (and the SIGABRT the supervisor
 *   sends a hung worker) writes the Python stack of every thread to the output the supervisor
 *   keeps. The supervisor passes the part of it the case wrote (earlier cases' stacks are
 *   not this case's), and ic_crash_locate reads the current thread's stack from it: the innermost
 *   frame (the Python call that was running) and the innermost frame in a probe file of the
 *   case, whose function (build, export, stream: the producer's; consume, compute: the
 *   consumer's; describe) says which side was at work.
 * - Attribution is worked out, never guessed: a stack without a probe frame, or a frame both
 *   sides share (one library on both sides, describe), charges both sides.
 * - Plain string work on the caller's buffers; nothing allocates.
 */
#ifndef IC_CRASH_H
#define IC_CRASH_H

#include <stdbool.h>
#include <stddef.h>

#include "ic_rules.h"

struct ic_crash_site {
    bool traceback;       /* a Python traceback was found in the output */
    char innermost[240];  /* "lib/ctypes/__init__.py:538 in string_at", or "" */
    char probe_call[160]; /* "consume() of probes/mlx.py:85", or "" when no probe frame */
    enum ic_side side;    /* IC_SIDE_BOTH when it cannot be told */
};

/* Reads the last traceback in `output`. `producer_path` and `consumer_path` are the probe
 * files of the case (the consumer's is NULL for interopcheck's own consumer). Always fills
 * *ret; returns true when a traceback was found. */
bool ic_crash_locate(const char *output, const char *producer_path, const char *consumer_path,
                     struct ic_crash_site *ret);

#endif
