/*
 * ic_ipc: the private, framed channel between the supervisor and one worker, and the one table
 * of the messages that travel on it.
 *
 * Contract
 * - Transport: one SOCK_STREAM socketpair per worker. The supervisor passes the worker's end
 *   at a descriptor number drawn at random (ic_ipc_child_fd), and the worker marks it
 *   close-on-exec before it loads anything, so no program a library starts inherits it and
 *   nothing finds it at a fixed number. The libraries' own stdout and stderr are another pipe.
 * - Framing: a frame is an 8-byte header, "IC", version 1, a zero byte, then the payload's
 *   length as a 32-bit big-endian number, followed by the payload: one JSON object, UTF-8,
 *   without NUL. Anything else where a header is expected, a length above IC_IPC_MAX_FRAME,
 *   or a payload that is not one JSON object is a protocol violation (IC_EPROTO) with its
 *   reason in words. A channel is never resynchronised: after a violation it is closed.
 * - Vocabulary: IC_MESSAGE_LIST holds every message, each row its name (the "msg" member),
 *   the side that sends it, and its members with their JSON types. ic_ipc_check accepts a
 *   message only when the receiving side expects it, it has every member its row requires,
 *   no member its row lacks, and each member has its type. Replies carry the "seq" of the
 *   request they answer and, for a case, its id: the supervisor matches both.
 * - Writing: a frame goes out in one write, since each write wakes the reader.
 * - Output marks: the libraries' output pipe and the socket are two channels, and the
 *   supervisor cannot tell in which order a worker that runs ahead of it (pipelined requests)
 *   wrote to them. So a worker writes IC_OUTPUT_CASE_MARK to its output, in the pipe itself,
 *   as each case and each import starts: what follows the last mark is that case's own output
 *   (its crash's Python stack), whenever the supervisor reads it. The supervisor strips the
 *   marks from what it keeps.
 * - Ownership: ic_ipc_send borrows its message. struct ic_framebuf owns its storage
 *   (ic_framebuf_release); a message handed out by ic_framebuf_next is the caller's.
 */
#ifndef IC_IPC_H
#define IC_IPC_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Control characters around a name, in an order no text a library prints holds; its only
 * border (a prefix that is also a suffix) is its first byte, so a reader matches it byte by
 * byte, across reads, without backtracking. */
#define IC_OUTPUT_CASE_MARK "\x1e\x1finteropcheck case\x1f\x1e"

/* Results and reproducer scripts are a few kilobytes; probe info is capped at load. */
#define IC_IPC_MAX_FRAME (16u * 1024 * 1024)
#define IC_IPC_HEADER_SIZE 8

enum ic_ipc_side {
    IC_IPC_SUPERVISOR, /* sends requests */
    IC_IPC_WORKER,     /* sends answers */
};

/* X(ENUM, name, sender, members): members are "name:type" words, type s (string),
 * i (integer >= 0), n (number), b (bool), o (object), a (array); a trailing ? marks an
 * optional member. Every message also has "msg", its name. */
#define IC_MESSAGE_LIST(X)                                                                         \
    X(LOAD, "load", IC_IPC_SUPERVISOR, "seq:i probe:s path:s ask:a?")                              \
    X(RUN, "run", IC_IPC_SUPERVISOR, "seq:i case:s seed:s load:a fork:b? pipelined:b?")            \
    X(REPRO, "repro", IC_IPC_SUPERVISOR, "seq:i case:s failure:o probes:a")                        \
    X(QUIT, "quit", IC_IPC_SUPERVISOR, "seq:i")                                                    \
    X(COPY, "copy", IC_IPC_SUPERVISOR, "seq:i slot:i")                                             \
    X(LOADED, "loaded", IC_IPC_WORKER, "seq:i probe:s ok:b ms:n info:o? error:o? present:a?")      \
    X(BEGIN, "begin", IC_IPC_WORKER, "seq:i case:s pid:i?")                                        \
    X(END, "end", IC_IPC_WORKER, "seq:i case:s result:o stages:a?")                                \
    X(SCRIPT, "script", IC_IPC_WORKER, "seq:i case:s script:s? error:s?")                          \
    X(LOST, "lost", IC_IPC_WORKER, "seq:i case:s how:s pid:i violation:s?")                        \
    X(FLAWED, "flawed", IC_IPC_WORKER, "seq:i case:s rule:s text:s")                               \
    X(COPIED, "copied", IC_IPC_WORKER, "seq:i pid:i error:s?")

enum ic_message {
#define IC_MESSAGE_ENUM(e, name, sender, members) IC_MSG_##e,
    IC_MESSAGE_LIST(IC_MESSAGE_ENUM)
#undef IC_MESSAGE_ENUM
        IC_MSG_COUNT
};

const char *ic_message_name(enum ic_message kind);

/* A new message of `kind` with its "msg" and "seq" members; NULL when out of memory. */
cJSON *ic_message_new(enum ic_message kind, unsigned long long seq);

/* Checks a received message against the table (see the contract). 0 and *ret_kind, or
 * IC_EPROTO with the reason in `why`. */
int ic_ipc_check(const cJSON *msg, enum ic_ipc_side receiver, enum ic_message *ret_kind,
                 char *why, size_t why_size);

/* The descriptor number the worker's end is given: random, in [100, 1000). */
int ic_ipc_child_fd(void);

/* Sends `msg` as one frame, in one write, its text printed here (numbers without printf).
 * 0, IC_EIO when the peer is gone, IC_ENOMEM, IC_ERANGE when the message is larger than a
 * frame may be, IC_EINVAL for a tree cJSON could not print either (a raw item without text,
 * a member without a name). */
int ic_ipc_send(int fd, const cJSON *msg);

/* Sends `msg` as one frame with the `count` descriptors `fds` attached (SCM_RIGHTS; at most
 * IC_IPC_MAX_FDS): a "copy" request carries its new worker's channel, output and events ends.
 * The descriptors stay the caller's (the peer gets duplicates). As ic_ipc_send. */
int ic_ipc_send_fds(int fd, const cJSON *msg, const int *fds, int count);

#define IC_IPC_MAX_FDS 4

struct ic_framebuf {
    unsigned char *data;
    size_t len;
    size_t cap;
    /* Descriptors that came with the bytes (ic_ipc_send_fds), kept only where accept_fds is
     * set (the worker's channel); anywhere else they are closed as they arrive. Owned. */
    bool accept_fds;
    int fds[IC_IPC_MAX_FDS];
    int nfds;
};

/* Reads what is available (one read call; on a socket, one recvmsg, which also takes the
 * descriptors sent with the bytes). Returns the number of bytes read, 0 at end of file,
 * IC_EAGAIN when a non-blocking descriptor has nothing yet, IC_EIO on error, IC_ENOMEM. */
int ic_framebuf_fill(struct ic_framebuf *buf, int fd);

/* Takes the descriptors received so far, oldest first, up to `max` (the rest stay); how many. */
int ic_framebuf_take_fds(struct ic_framebuf *buf, int *fds, int max);

/* The next complete frame's message (the caller deletes it), or NULL: either no complete
 * frame is buffered (*ret_error 0), or the bytes are not a frame (*ret_error IC_EPROTO, the
 * reason in `why`). */
cJSON *ic_framebuf_next(struct ic_framebuf *buf, int *ret_error, char *why, size_t why_size);

/* True when part of a frame is buffered: a peer that stops there broke the channel. */
bool ic_framebuf_partial(const struct ic_framebuf *buf);

void ic_framebuf_release(struct ic_framebuf *buf);

/* Blocks until one message arrives: for the worker, whose only input is the supervisor.
 * NULL at end of file or on error (*ret_error: 0 for end of file, IC_EPROTO with `why`,
 * IC_EIO). */
cJSON *ic_ipc_receive(int fd, struct ic_framebuf *buf, int *ret_error, char *why,
                      size_t why_size);

#endif
