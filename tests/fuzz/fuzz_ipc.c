/* fuzz_ipc: the channel between supervisor and worker (src/run/ic_ipc.c) on byte streams from
 * the input: the frame reader (ic_framebuf_next) and the message table's check (ic_ipc_check),
 * as the supervisor reads a worker that a library has taken over, and as a worker reads what
 * arrives on its descriptor.
 *
 * Input layout:
 *   u8  chunk   the stream arrives in reads of chunk + 1 bytes (1 to 256), as a socket may
 *               deliver it
 *   the rest    the stream
 *
 * Besides memory safety the harness checks what the contract promises: a frame reader never
 * hands out a message before the whole frame has arrived, and once it reports a violation the
 * reason is words and nothing more is read (the channel is closed); each message handed out is
 * one JSON object; a message the check accepts carries the "msg" of its kind and an integer
 * "seq"; the check answers the same for the same message, and a message the table accepts
 * survives being framed again (ic_message_new's members, printed and re-read) with the same
 * verdict. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_common.h"
#include "ic_error.h"
#include "ic_ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends n bytes to the buffer as ic_framebuf_fill would after a read. */
static void fuzz_append(struct ic_framebuf *buf, const uint8_t *bytes, size_t n)
{
    if (buf->cap - buf->len < n) {
        size_t cap = buf->len + n + 64;
        unsigned char *grown = realloc(buf->data, cap);
        FUZZ_CHECK(grown != NULL);
        buf->data = grown;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, bytes, n);
    buf->len += n;
}

/* A frame around `msg` as ic_ipc_send writes it, read back by a fresh reader. */
static cJSON *fuzz_reframe(const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    FUZZ_CHECK(text != NULL);
    size_t len = strlen(text);
    struct ic_framebuf buf = {0};
    const uint8_t header[IC_IPC_HEADER_SIZE] = {
        'I',         'C', 1, 0, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
        (uint8_t)len};
    fuzz_append(&buf, header, sizeof(header));
    fuzz_append(&buf, (const uint8_t *)text, len);
    free(text);
    int error = 0;
    char why[160];
    cJSON *again = ic_framebuf_next(&buf, &error, why, sizeof(why));
    FUZZ_CHECK(again != NULL && error == 0);
    FUZZ_CHECK(!ic_framebuf_partial(&buf)); /* the frame was consumed whole */
    ic_framebuf_release(&buf);
    return again;
}

static void fuzz_check_message(const cJSON *msg)
{
    FUZZ_CHECK(cJSON_IsObject(msg));
    for (int side = IC_IPC_SUPERVISOR; side <= IC_IPC_WORKER; side++) {
        enum ic_message kind = IC_MSG_COUNT;
        char why[256] = "";
        int rc = ic_ipc_check(msg, (enum ic_ipc_side)side, &kind, why, sizeof(why));
        if (rc < 0) {
            FUZZ_CHECK(rc == IC_EPROTO && why[0] != '\0');
            FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
            continue;
        }
        FUZZ_CHECK(rc == 0 && kind >= 0 && kind < IC_MSG_COUNT);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(msg, "msg");
        FUZZ_CHECK(cJSON_IsString(name) && strcmp(name->valuestring, ic_message_name(kind)) == 0);
        FUZZ_CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(msg, "seq")));
        enum ic_message again_kind = IC_MSG_COUNT;
        FUZZ_CHECK(ic_ipc_check(msg, (enum ic_ipc_side)side, &again_kind, why, sizeof(why)) == 0 &&
                   again_kind == kind);
        cJSON *reframed = fuzz_reframe(msg);
        FUZZ_CHECK(ic_ipc_check(reframed, (enum ic_ipc_side)side, &again_kind, why, sizeof(why)) ==
                       0 &&
                   again_kind == kind);
        cJSON_Delete(reframed);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    const uint8_t *stream = data + 1;
    size_t left = size - 1;
    struct ic_framebuf buf = {0};
    size_t delivered = 0;
    bool broken = false;

    while (left > 0 && !broken) {
        size_t n = left < chunk ? left : chunk;
        fuzz_append(&buf, stream, n);
        stream += n;
        left -= n;
        delivered += n;
        for (;;) {
            size_t before = buf.len;
            int error = 0;
            char why[256] = "";
            cJSON *msg = ic_framebuf_next(&buf, &error, why, sizeof(why));
            if (error) {
                FUZZ_CHECK(msg == NULL && error == IC_EPROTO && why[0] != '\0');
                FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL);
                broken = true; /* the channel is closed: nothing after it is read */
                break;
            }
            if (!msg) {
                FUZZ_CHECK(buf.len == before); /* nothing consumed without a message */
                break;
            }
            /* A frame is at least its header, and came whole. */
            FUZZ_CHECK(before - buf.len >= IC_IPC_HEADER_SIZE + 2);
            FUZZ_CHECK(before - buf.len <= IC_IPC_HEADER_SIZE + (size_t)IC_IPC_MAX_FRAME);
            fuzz_check_message(msg);
            cJSON_Delete(msg);
        }
    }
    FUZZ_CHECK(delivered <= size);
    ic_framebuf_release(&buf);
    return 0;
}
