#include "ic_ipc.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_result.h"
#include "ic_text.h"

static const struct {
    const char *name;
    enum ic_ipc_side sender;
    const char *members;
} ic_message_table[] = {
#define IC_MESSAGE_ROW(e, name, sender, members) {name, sender, members},
    IC_MESSAGE_LIST(IC_MESSAGE_ROW)
#undef IC_MESSAGE_ROW
};

const char *ic_message_name(enum ic_message kind)
{
    return IC_TABLE_FIELD(ic_message_table, kind, IC_MSG_COUNT, name, "invalid");
}

cJSON *ic_message_new(enum ic_message kind, unsigned long long seq)
{
    cJSON *msg = cJSON_CreateObject();
    if (msg && cJSON_AddStringToObject(msg, "msg", ic_message_name(kind)) &&
        cJSON_AddNumberToObject(msg, "seq", (double)seq))
        return msg;
    cJSON_Delete(msg);
    return NULL;
}

/* --- Checking a message against its row ----------------------------------------------------- */

static bool ic_member_has_type(const cJSON *item, char type)
{
    switch (type) {
    case 's':
        return cJSON_IsString(item);
    case 'i':
        return cJSON_IsNumber(item) && item->valuedouble >= 0 &&
               item->valuedouble < 9007199254740992.0 &&
               (double)(uint64_t)item->valuedouble == item->valuedouble;
    case 'n':
        return cJSON_IsNumber(item) && item->valuedouble == item->valuedouble &&
               item->valuedouble - item->valuedouble == 0; /* not NaN, not infinite */
    case 'b':
        return cJSON_IsBool(item);
    case 'o':
        return cJSON_IsObject(item);
    case 'a':
        return cJSON_IsArray(item);
    default:
        return false;
    }
}

static const char *ic_type_words(char type)
{
    return type == 's'   ? "a string"
           : type == 'i' ? "an integer >= 0"
           : type == 'n' ? "a number"
           : type == 'b' ? "a bool"
           : type == 'o' ? "an object"
                         : "an array";
}

/* Finds `name` among the members of a row ("seq:i case:s ..."): its type and whether it is
 * optional. False when the row has no such member. */
static bool ic_row_member(const char *members, const char *name, char *ret_type, bool *ret_optional)
{
    size_t len = strlen(name);
    for (const char *at = members; *at;) {
        const char *end = strchr(at, ' ');
        size_t word = end ? (size_t)(end - at) : strlen(at);
        const char *colon = memchr(at, ':', word);
        if (colon && (size_t)(colon - at) == len && strncmp(at, name, len) == 0) {
            *ret_type = colon[1];
            *ret_optional = colon[2] == '?';
            return true;
        }
        at += word + (end ? 1 : 0);
    }
    return false;
}

static int ic_check_members(const cJSON *msg, const char *kind, const char *members, char *why,
                            size_t why_size)
{
    /* Every member present is in the row, with its type. */
    const cJSON *item;
    cJSON_ArrayForEach(item, msg)
    {
        char type;
        bool optional;
        if (strcmp(item->string, "msg") == 0)
            continue;
        if (!ic_row_member(members, item->string, &type, &optional)) {
            snprintf(why, why_size, "a message \"%s\" has no member \"%.40s\"", kind,
                     item->string);
            return IC_EPROTO;
        }
        if (!ic_member_has_type(item, type)) {
            snprintf(why, why_size, "in a message \"%s\", \"%s\" must be %s", kind, item->string,
                     ic_type_words(type));
            return IC_EPROTO;
        }
    }
    /* Every required member of the row is present. */
    for (const char *at = members; *at;) {
        const char *end = strchr(at, ' ');
        size_t word = end ? (size_t)(end - at) : strlen(at);
        const char *colon = memchr(at, ':', word);
        /* Copied by hand: snprintf here ran for each member of each message, on both sides. */
        char name[32];
        size_t name_len = colon ? (size_t)(colon - at) : 0;
        if (name_len >= sizeof(name))
            name_len = sizeof(name) - 1;
        memcpy(name, at, name_len);
        name[name_len] = '\0';
        if (colon && colon[2] != '?' && !cJSON_GetObjectItemCaseSensitive(msg, name)) {
            snprintf(why, why_size, "a message \"%s\" lacks \"%s\"", kind, name);
            return IC_EPROTO;
        }
        at += word + (end ? 1 : 0);
    }
    return 0;
}

int ic_ipc_check(const cJSON *msg, enum ic_ipc_side receiver, enum ic_message *ret_kind,
                 char *why, size_t why_size)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(msg, "msg");
    if (!cJSON_IsObject(msg) || !cJSON_IsString(name)) {
        snprintf(why, why_size, "a message without a \"msg\" name");
        return IC_EPROTO;
    }
    for (int k = 0; k < IC_MSG_COUNT; k++) {
        if (strcmp(ic_message_table[k].name, name->valuestring) != 0)
            continue;
        if (ic_message_table[k].sender == receiver) {
            snprintf(why, why_size, "a message \"%s\" in the wrong direction",
                     ic_message_table[k].name);
            return IC_EPROTO;
        }
        *ret_kind = (enum ic_message)k;
        return ic_check_members(msg, ic_message_table[k].name, ic_message_table[k].members, why,
                                why_size);
    }
    snprintf(why, why_size, "an unknown message \"%.40s\"", name->valuestring);
    return IC_EPROTO;
}

/* --- Frames --------------------------------------------------------------------------------- */

int ic_ipc_child_fd(void)
{
    unsigned int draw = 0;
    if (getrandom(&draw, sizeof(draw), GRND_NONBLOCK) != (ssize_t)sizeof(draw))
        draw = (unsigned int)getpid() ^ (unsigned int)time(NULL);
    return 100 + (int)(draw % 900u);
}

static int ic_write_all(int fd, const unsigned char *data, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* The supervisor's end does not block; a peer that reads nothing for 10 s is
             * as good as gone. */
            struct pollfd out = {.fd = fd, .events = POLLOUT};
            if (poll(&out, 1, 10000) > 0)
                continue;
            return IC_EIO;
        }
        if (n <= 0)
            return IC_EIO;
        done += (size_t)n;
    }
    return 0;
}

/* A number of a message: a whole one in all its digits (ic_number_text, as cJSON, lets a
 * 16-digit integer lose its last digit to 15-digit printing), any other as ic_number_text
 * writes it. */
static void ic_ipc_put_number(struct ic_text_buf *out, double d)
{
    char text[IC_NUMBER_TEXT_MAX];
    if (d > -9.2e18 && d < 9.2e18 && d == (double)(long long)d && d != 0) {
        size_t at = 0;
        if (d < 0)
            text[at++] = '-';
        at += ic_text_decimal(text + at, (uint64_t)(d < 0 ? -d : d));
        ic_text_buf_add(out, text, at);
        return;
    }
    ic_number_text(d, text);
    ic_text_buf_adds(out, text);
}

/* A message's one-line JSON text, appended to `out` as cJSON_PrintUnformatted writes it, but
 * for its numbers: cJSON 1.7.15 prints every number, an integer too, with "%1.15g" and reads it
 * back with sscanf to check, a quarter of a microsecond each, and a case's request and answer
 * hold ten (the sequence number, the stages' microseconds): 2.5 us of the answer's 2.6 us of
 * printing. ic_ipc_put_number writes them without printf. 0, IC_ENOMEM, or IC_EINVAL
 * for an item cJSON could not print either (a raw item without text, an invalid one). */
static int ic_ipc_put(struct ic_text_buf *out, const cJSON *item)
{
    switch (item->type & 0xFF) {
    case cJSON_NULL:
        ic_text_buf_add(out, "null", 4);
        break;
    case cJSON_False:
        ic_text_buf_add(out, "false", 5);
        break;
    case cJSON_True:
        ic_text_buf_add(out, "true", 4);
        break;
    case cJSON_Number:
        ic_ipc_put_number(out, item->valuedouble);
        break;
    case cJSON_String:
        ic_text_json_string(out, item->valuestring ? item->valuestring : "");
        break;
    case cJSON_Raw:
        if (!item->valuestring)
            return IC_EINVAL;
        ic_text_buf_adds(out, item->valuestring);
        break;
    case cJSON_Array:
    case cJSON_Object: {
        bool object = (item->type & 0xFF) == cJSON_Object;
        ic_text_buf_add(out, object ? "{" : "[", 1);
        for (const cJSON *child = item->child; child; child = child->next) {
            if (child != item->child)
                ic_text_buf_add(out, ",", 1);
            if (object) {
                if (!child->string)
                    return IC_EINVAL;
                ic_text_json_string(out, child->string);
                ic_text_buf_add(out, ":", 1);
            }
            int rc = ic_ipc_put(out, child);
            if (rc < 0)
                return rc;
        }
        ic_text_buf_add(out, object ? "}" : "]", 1);
        break;
    }
    default:
        return IC_EINVAL;
    }
    return out->status;
}

/* Header and body in one write: each write to the socket wakes the reader, and a header
 * written alone cost the other side a wake-up (and a poll) for eight bytes. The header's room
 * is taken first, so the frame is made where the text is printed. */
int ic_ipc_send(int fd, const cJSON *msg)
{
    struct ic_text_buf frame;
    ic_text_buf_init(&frame);
    ic_text_buf_add(&frame, "IC\x01\x00....", IC_IPC_HEADER_SIZE);
    int rc = frame.status ? frame.status : ic_ipc_put(&frame, msg);
    size_t len = frame.len - IC_IPC_HEADER_SIZE;
    if (rc == 0 && len > IC_IPC_MAX_FRAME)
        rc = IC_ERANGE;
    if (rc == 0) {
        unsigned char *header = (unsigned char *)frame.data;
        header[4] = (unsigned char)(len >> 24);
        header[5] = (unsigned char)(len >> 16);
        header[6] = (unsigned char)(len >> 8);
        header[7] = (unsigned char)len;
        rc = ic_write_all(fd, header, frame.len);
    }
    ic_text_buf_release(&frame);
    return rc;
}

int ic_ipc_send_fds(int fd, const cJSON *msg, const int *fds, int count)
{
    if (count < 1 || count > IC_IPC_MAX_FDS)
        return IC_EINVAL;
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return IC_ENOMEM;
    size_t len = strlen(text);
    unsigned char header[IC_IPC_HEADER_SIZE] = {
        'I', 'C', 1, 0, (unsigned char)(len >> 24), (unsigned char)(len >> 16),
        (unsigned char)(len >> 8), (unsigned char)len};
    /* The descriptors ride on the header's bytes; the rest follows as plain writes. */
    union {
        char buf[CMSG_SPACE(sizeof(int) * IC_IPC_MAX_FDS)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec iov = {.iov_base = header, .iov_len = sizeof(header)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)count);
    int rc = IC_ERANGE;
    if (len <= IC_IPC_MAX_FRAME) {
        ssize_t sent;
        bool waited = false;
        for (;;) {
            sent = sendmsg(fd, &mh, MSG_NOSIGNAL);
            if (sent < 0 && errno == EINTR)
                continue;
            if (sent < 0 && !waited && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                /* as ic_write_all: a peer that reads nothing for 10 s is as good as gone */
                struct pollfd writable = {.fd = fd, .events = POLLOUT};
                waited = true;
                if (poll(&writable, 1, 10000) > 0)
                    continue;
            }
            break;
        }
        rc = sent <= 0 ? IC_EIO
                       : ic_write_all(fd, header + sent, sizeof(header) - (size_t)sent);
        if (rc == 0)
            rc = ic_write_all(fd, (const unsigned char *)text, len);
    }
    cJSON_free(text);
    return rc;
}

/* Keeps (or, where the buffer takes none, closes) the descriptors of one SCM_RIGHTS record. */
static void ic_framebuf_keep_fds(struct ic_framebuf *buf, const struct cmsghdr *cm)
{
    size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
        int got;
        memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        if (buf->accept_fds && buf->nfds < IC_IPC_MAX_FDS)
            buf->fds[buf->nfds++] = got;
        else
            close(got);
    }
}

int ic_framebuf_take_fds(struct ic_framebuf *buf, int *fds, int max)
{
    int n = buf->nfds < max ? buf->nfds : max;
    memcpy(fds, buf->fds, sizeof(int) * (size_t)n);
    memmove(buf->fds, buf->fds + n, sizeof(int) * (size_t)(buf->nfds - n));
    buf->nfds -= n;
    return n;
}

/* One recvmsg: the bytes, and any descriptors sent with them. ENOTSOCK: `fd` is a pipe. */
static ssize_t ic_framebuf_receive(struct ic_framebuf *buf, int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * IC_IPC_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = buf->data + buf->len, .iov_len = buf->cap - buf->len};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
        .msg_controllen = sizeof(control.buf)};
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            ic_framebuf_keep_fds(buf, cm);
    }
    return n;
}

int ic_framebuf_fill(struct ic_framebuf *buf, int fd)
{
    if (buf->cap - buf->len < 65536) {
        size_t cap = buf->cap ? buf->cap * 2 : 131072;
        unsigned char *data = realloc(buf->data, cap);
        if (!data)
            return IC_ENOMEM;
        buf->data = data;
        buf->cap = cap;
    }
    ssize_t n;
    do {
        n = ic_framebuf_receive(buf, fd);
        if (n < 0 && errno == ENOTSOCK)
            n = read(fd, buf->data + buf->len, buf->cap - buf->len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return IC_EAGAIN;
    if (n < 0)
        return IC_EIO;
    buf->len += (size_t)n;
    return (int)n;
}

bool ic_framebuf_partial(const struct ic_framebuf *buf)
{
    return buf->len > 0;
}

/* The body length a frame header gives (big-endian, after the four magic bytes). */
static size_t ic_frame_body_len(const unsigned char *header)
{
    return ((size_t)header[4] << 24) | ((size_t)header[5] << 16) | ((size_t)header[6] << 8) |
           header[7];
}

/* What stood where a header was expected, for the reason of a violation. */
static void ic_describe_bytes(const unsigned char *data, size_t len, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < len && i < 8 && used + 5 < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%02x", i ? " " : "", data[i]);
}

static void ic_framebuf_consume(struct ic_framebuf *buf, size_t count)
{
    memmove(buf->data, buf->data + count, buf->len - count);
    buf->len -= count;
}

cJSON *ic_framebuf_next(struct ic_framebuf *buf, int *ret_error, char *why, size_t why_size)
{
    char bytes[48];
    *ret_error = 0;
    /* A wrong first byte is known at once; the rest of a header only when it is there. */
    size_t seen = buf->len < 4 ? buf->len : 4;
    static const unsigned char magic[4] = {'I', 'C', 1, 0};
    if (seen && memcmp(buf->data, magic, seen) != 0) {
        ic_describe_bytes(buf->data, buf->len, bytes, sizeof(bytes));
        snprintf(why, why_size, "bytes that are not a frame header (%s)", bytes);
        *ret_error = IC_EPROTO;
        return NULL;
    }
    if (buf->len < IC_IPC_HEADER_SIZE)
        return NULL;
    size_t len = ic_frame_body_len(buf->data);
    if (len > IC_IPC_MAX_FRAME) {
        snprintf(why, why_size, "a frame of %zu bytes (at most %u)", len, IC_IPC_MAX_FRAME);
        *ret_error = IC_EPROTO;
        return NULL;
    }
    if (buf->len - IC_IPC_HEADER_SIZE < len)
        return NULL;
    const char *payload = (const char *)buf->data + IC_IPC_HEADER_SIZE;
    const char *end = NULL;
    cJSON *msg = NULL;
    if (memchr(payload, '\0', len)) {
        snprintf(why, why_size, "a frame holding a NUL byte");
    } else {
        msg = cJSON_ParseWithLengthOpts(payload, len, &end, false);
        while (msg && end < payload + len && (*end == ' ' || *end == '\n'))
            end++;
        if (!cJSON_IsObject(msg) || end != payload + len) {
            snprintf(why, why_size, "a frame that is not one JSON object");
            cJSON_Delete(msg);
            msg = NULL;
        }
    }
    ic_framebuf_consume(buf, IC_IPC_HEADER_SIZE + len);
    if (!msg)
        *ret_error = IC_EPROTO;
    return msg;
}

void ic_framebuf_release(struct ic_framebuf *buf)
{
    for (int i = 0; i < buf->nfds; i++)
        close(buf->fds[i]);
    buf->nfds = 0;
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

cJSON *ic_ipc_receive(int fd, struct ic_framebuf *buf, int *ret_error, char *why,
                      size_t why_size)
{
    for (;;) {
        cJSON *msg = ic_framebuf_next(buf, ret_error, why, why_size);
        if (msg || *ret_error)
            return msg;
        int n = ic_framebuf_fill(buf, fd);
        if (n <= 0) {
            *ret_error = n;
            if (n == 0 && ic_framebuf_partial(buf)) {
                snprintf(why, why_size, "the channel closed in the middle of a frame");
                *ret_error = IC_EPROTO;
            }
            return NULL;
        }
    }
}
