/*
 * ic_ipc: the line-framed JSON messages between the supervisor and its workers.
 *
 * Contract
 * - A message is one JSON object on one line (cJSON's unformatted output never contains a
 *   raw newline). Both directions use the same framing over one socket per worker.
 * - ic_ipc_send writes the whole line or fails; it never leaves half a message behind
 *   unless the peer is gone (then the peer's death is what the caller handles).
 * - struct ic_linebuf accumulates bytes read from a descriptor and hands out complete lines;
 *   it owns its storage (ic_linebuf_release frees it). A line longer than IC_IPC_MAX_LINE is
 *   a protocol error, which guards the supervisor against a runaway worker.
 */
#ifndef IC_IPC_H
#define IC_IPC_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define IC_IPC_MAX_LINE (16 * 1024 * 1024)

struct ic_linebuf {
    char *data;
    size_t len;
    size_t cap;
};

/* Sends `msg` as one line. IC_EIO when the peer is gone, IC_ENOMEM. */
int ic_ipc_send(int fd, const cJSON *msg);

/* Reads what is available (one read call). Returns the number of bytes read, 0 at end of
 * file, IC_EIO on error (EINTR and EAGAIN give IC_EIO too only if nothing could be read:
 * callers poll first). */
int ic_linebuf_fill(struct ic_linebuf *buf, int fd);

/* The next complete line without its newline, parsed as JSON (the caller deletes it), or
 * NULL when no complete line is buffered. *ret_error is set to IC_EPROTO for a line that is
 * not a JSON object or too long. */
cJSON *ic_linebuf_next(struct ic_linebuf *buf, int *ret_error);

void ic_linebuf_release(struct ic_linebuf *buf);

/* Blocks until one message arrives: for the worker, whose only input is the supervisor.
 * NULL at end of file or on error (*ret_error says which: 0 for end of file). */
cJSON *ic_ipc_receive(int fd, struct ic_linebuf *buf, int *ret_error);

#endif
