#include "ic_ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_error.h"

int ic_ipc_send(int fd, const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return IC_ENOMEM;
    size_t len = strlen(text);
    int rc = 0;
    /* Append the newline in a second write of the same loop so the text needs no copy. */
    const char *parts[2] = {text, "\n"};
    size_t sizes[2] = {len, 1};
    for (int p = 0; p < 2 && rc == 0; p++) {
        size_t done = 0;
        while (done < sizes[p]) {
            ssize_t n = write(fd, parts[p] + done, sizes[p] - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                rc = IC_EIO;
                break;
            }
            done += (size_t)n;
        }
    }
    cJSON_free(text);
    return rc;
}

int ic_linebuf_fill(struct ic_linebuf *buf, int fd)
{
    if (buf->cap - buf->len < 65536) {
        size_t cap = buf->cap ? buf->cap * 2 : 131072;
        char *data = realloc(buf->data, cap);
        if (!data)
            return IC_ENOMEM;
        buf->data = data;
        buf->cap = cap;
    }
    ssize_t n;
    do {
        n = read(fd, buf->data + buf->len, buf->cap - buf->len);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return IC_EIO;
    buf->len += (size_t)n;
    return (int)n;
}

cJSON *ic_linebuf_next(struct ic_linebuf *buf, int *ret_error)
{
    *ret_error = 0;
    char *newline = buf->len ? memchr(buf->data, '\n', buf->len) : NULL;
    if (!newline) {
        if (buf->len > IC_IPC_MAX_LINE)
            *ret_error = IC_EPROTO;
        return NULL;
    }
    *newline = '\0';
    cJSON *msg = cJSON_Parse(buf->data);
    size_t consumed = (size_t)(newline - buf->data) + 1;
    memmove(buf->data, newline + 1, buf->len - consumed);
    buf->len -= consumed;
    if (!cJSON_IsObject(msg)) {
        cJSON_Delete(msg);
        *ret_error = IC_EPROTO;
        return NULL;
    }
    return msg;
}

void ic_linebuf_release(struct ic_linebuf *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

cJSON *ic_ipc_receive(int fd, struct ic_linebuf *buf, int *ret_error)
{
    for (;;) {
        cJSON *msg = ic_linebuf_next(buf, ret_error);
        if (msg || *ret_error)
            return msg;
        int n = ic_linebuf_fill(buf, fd);
        if (n <= 0) {
            *ret_error = n;
            return NULL;
        }
    }
}
