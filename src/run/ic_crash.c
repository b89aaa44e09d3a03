#include "ic_crash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* faulthandler writes "Current thread 0x... (most recent call first):" (or "Thread 0x...")
 * then one line per frame, innermost first: '  File "PATH", line N in FUNC'. */
static const char *ic_last_current_thread(const char *output)
{
    const char *found = NULL, *at = output;
    while ((at = strstr(at, "Current thread ")) != NULL) {
        found = at;
        at++;
    }
    if (!found) {
        /* Python builds without thread names print "Stack (most recent call first):". */
        at = output;
        while ((at = strstr(at, "(most recent call first):")) != NULL) {
            found = at;
            at++;
        }
    }
    return found;
}

struct ic_frame {
    char path[512];
    int line;
    char function[96];
};

/* Parses one frame line at `line`; false when it is not one. */
static bool ic_parse_frame(const char *line, struct ic_frame *frame)
{
    const char *file = strstr(line, "File \"");
    const char *eol = strchr(line, '\n');
    if (!file || (eol && file > eol))
        return false;
    file += 6;
    const char *end = strchr(file, '"');
    if (!end || (eol && end > eol))
        return false;
    size_t len = (size_t)(end - file);
    if (len >= sizeof(frame->path))
        len = sizeof(frame->path) - 1;
    memcpy(frame->path, file, len);
    frame->path[len] = '\0';
    const char *line_at = strstr(end, ", line ");
    frame->line = line_at && (!eol || line_at < eol) ? atoi(line_at + 7) : 0;
    const char *in = strstr(end, " in ");
    frame->function[0] = '\0';
    if (in && (!eol || in < eol)) {
        in += 4;
        size_t n = eol ? (size_t)(eol - in) : strlen(in);
        if (n >= sizeof(frame->function))
            n = sizeof(frame->function) - 1;
        memcpy(frame->function, in, n);
        frame->function[n] = '\0';
        while (n > 0 && (frame->function[n - 1] == '\r' || frame->function[n - 1] == ' '))
            frame->function[--n] = '\0';
    }
    return true;
}

/* The last two path components, which say enough to a reader ("probes/mlx.py"). */
static const char *ic_short_path(const char *path)
{
    const char *last = strrchr(path, '/');
    if (!last)
        return path;
    const char *prev = last;
    while (prev > path && prev[-1] != '/')
        prev--;
    return prev;
}

static bool ic_same_file(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Which side a probe function works for, given whose probe file it is in. */
static enum ic_side ic_side_of(const struct ic_frame *frame, bool in_producer, bool in_consumer)
{
    const char *f = frame->function;
    bool producer_call =
        strcmp(f, "build") == 0 || strcmp(f, "export") == 0 || strcmp(f, "stream") == 0;
    /* compute() is the consumer's operation on its import: its crash is the consumer's. */
    bool consumer_call = strcmp(f, "consume") == 0 || strcmp(f, "compute") == 0;
    if (in_producer && !in_consumer)
        return consumer_call ? IC_SIDE_BOTH : IC_SIDE_PRODUCER;
    if (in_consumer && !in_producer)
        return producer_call ? IC_SIDE_BOTH : IC_SIDE_CONSUMER;
    /* One library on both sides: only the function tells. */
    if (producer_call)
        return IC_SIDE_PRODUCER;
    if (consumer_call)
        return IC_SIDE_CONSUMER;
    return IC_SIDE_BOTH;
}

bool ic_crash_locate(const char *output, const char *producer_path, const char *consumer_path,
                     struct ic_crash_site *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->side = IC_SIDE_BOTH;
    const char *stack = output ? ic_last_current_thread(output) : NULL;
    if (!stack)
        return false;
    ret->traceback = true;
    const char *line = strchr(stack, '\n');
    bool first = true;
    while (line) {
        line++;
        struct ic_frame frame;
        if (!ic_parse_frame(line, &frame))
            break; /* the stack ends at the first line that is not a frame */
        if (first) {
            snprintf(ret->innermost, sizeof(ret->innermost), "%s:%d in %s",
                     ic_short_path(frame.path), frame.line, frame.function);
            first = false;
        }
        bool in_producer = ic_same_file(frame.path, producer_path);
        bool in_consumer = ic_same_file(frame.path, consumer_path);
        if (in_producer || in_consumer) {
            snprintf(ret->probe_call, sizeof(ret->probe_call), "%s() of %s:%d", frame.function,
                     ic_short_path(frame.path), frame.line);
            ret->side = ic_side_of(&frame, in_producer, in_consumer);
            break;
        }
        line = strchr(line, '\n');
    }
    return true;
}
