/* Unit tests of ic_ipc: frames over a real socketpair, and every message checked against
 * the table. */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_ipc.h"
#include "tap.h"

/* The result of reading `bytes` written raw into a fresh channel, with the reason. */
static int read_raw(const void *bytes, size_t len, bool close_after, char *why, size_t why_size,
                    cJSON **ret_msg)
{
    int sv[2];
    int error = 0;
    struct ic_framebuf buf = {0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1000;
    if (write(sv[1], bytes, len) != (ssize_t)len)
        return -1001;
    if (close_after)
        close(sv[1]);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    *ret_msg = NULL;
    why[0] = '\0';
    for (int i = 0; i < 4 && !*ret_msg && !error; i++) {
        int got = ic_framebuf_fill(&buf, sv[0]);
        *ret_msg = ic_framebuf_next(&buf, &error, why, why_size);
        if (got == 0 && !*ret_msg && !error && ic_framebuf_partial(&buf))
            error = 1; /* closed mid-frame */
        if (got <= 0)
            break;
    }
    ic_framebuf_release(&buf);
    close(sv[0]);
    if (!close_after)
        close(sv[1]);
    return error;
}

static void frame(unsigned char *out, const char *payload, size_t len)
{
    memcpy(out, "IC\x01\x00", 4);
    out[4] = (unsigned char)(len >> 24);
    out[5] = (unsigned char)(len >> 16);
    out[6] = (unsigned char)(len >> 8);
    out[7] = (unsigned char)len;
    memcpy(out + 8, payload, len);
}

static void test_frames(void)
{
    int sv[2];
    char why[256];
    int error = 0;
    struct ic_framebuf buf = {0};
    TAP_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "a socketpair");
    cJSON *sent = ic_message_new(IC_MSG_BEGIN, 7);
    cJSON_AddStringToObject(sent, "case", "dlpack.numpy.torch.cpu.float32.flat");
    TAP_OK(ic_ipc_send(sv[1], sent) == 0 && ic_ipc_send(sv[1], sent) == 0, "two frames sent");
    cJSON *a = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    cJSON *b = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    TAP_OK(a && b && cJSON_Compare(a, sent, true) && cJSON_Compare(b, sent, true),
           "each frame comes back as the message sent");
    cJSON_Delete(a);
    cJSON_Delete(b);
    close(sv[1]);
    a = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    TAP_OK(!a && error == 0, "end of file after the last frame is no error");
    cJSON_Delete(sent);
    ic_framebuf_release(&buf);
    close(sv[0]);

    cJSON *msg;
    unsigned char raw[64];
    TAP_OK(read_raw("garbage\n", 8, false, why, sizeof(why), &msg) == IC_EPROTO && !msg &&
               strstr(why, "not a frame header"),
           "text where a header is due is a violation at once (%s)", why);
    TAP_OK(read_raw("\0", 1, false, why, sizeof(why), &msg) == IC_EPROTO,
           "a lone NUL is a violation at once (%s)", why);
    TAP_OK(read_raw("IC\x01\x00\x80\x00\x00\x00", 8, false, why, sizeof(why), &msg) ==
                   IC_EPROTO &&
               strstr(why, "2147483648"),
           "a header announcing 2 GiB is a violation (%s)", why);
    frame(raw, "{\"msg\":\"x\"}\0", 12);
    TAP_OK(read_raw(raw, 20, false, why, sizeof(why), &msg) == IC_EPROTO && strstr(why, "NUL"),
           "a payload with a NUL is a violation (%s)", why);
    frame(raw, "[1, 2]", 6);
    TAP_OK(read_raw(raw, 14, false, why, sizeof(why), &msg) == IC_EPROTO,
           "a payload that is not an object is a violation (%s)", why);
    frame(raw, "{} {}", 5);
    TAP_OK(read_raw(raw, 13, false, why, sizeof(why), &msg) == IC_EPROTO,
           "two objects in one frame are a violation (%s)", why);
    frame(raw, "{\"msg\":\"quit\",\"seq\":1}", 22);
    TAP_OK(read_raw(raw, 20, false, why, sizeof(why), &msg) == 0 && !msg,
           "a frame cut short is not a message yet");
    TAP_OK(read_raw(raw, 20, true, why, sizeof(why), &msg) == 1,
           "... and a channel that closes there is broken");
    TAP_OK(read_raw(raw, 30, false, why, sizeof(why), &msg) == 0 && msg, "the whole frame is");
    cJSON_Delete(msg);
}

static int check(const char *json, enum ic_ipc_side receiver, char *why, size_t why_size)
{
    enum ic_message kind;
    cJSON *msg = cJSON_Parse(json);
    why[0] = '\0';
    int rc = ic_ipc_check(msg, receiver, &kind, why, why_size);
    cJSON_Delete(msg);
    return rc;
}

/* Whether `json` sent to the supervisor is refused as a violation whose reason (left in why)
 * names `needle`, when one is given. */
static bool refused(const char *json, const char *needle, char *why, size_t why_size)
{
    return check(json, IC_IPC_SUPERVISOR, why, why_size) == IC_EPROTO &&
           (!needle || strstr(why, needle));
}

static void test_table(void)
{
    char why[256];
    TAP_OK(check("{\"msg\":\"run\",\"seq\":3,\"case\":\"c\",\"seed\":\"1\",\"load\":[]}",
                 IC_IPC_WORKER, why, sizeof(why)) == 0,
           "a run request as the table has it is accepted");
    TAP_OK(check("{\"msg\":\"loaded\",\"seq\":3,\"probe\":\"numpy\",\"ok\":true,\"ms\":1.5}",
                 IC_IPC_SUPERVISOR, why, sizeof(why)) == 0,
           "an answer without its optional members is accepted");
    TAP_OK(refused("{\"msg\":\"run\",\"seq\":3,\"case\":\"c\",\"seed\":\"1\",\"load\":[]}",
                   "wrong direction", why, sizeof(why)),
           "a request sent to the supervisor is refused (%s)", why);
    TAP_OK(
        refused("{\"msg\":\"end\",\"seq\":3,\"case\":\"c\"}", "lacks \"result\"", why, sizeof(why)),
        "a missing member is named (%s)", why);
    TAP_OK(refused("{\"msg\":\"begin\",\"seq\":3,\"case\":\"c\",\"extra\":1}", "extra", why,
                   sizeof(why)),
           "a member the table lacks is refused (%s)", why);
    TAP_OK(refused("{\"msg\":\"begin\",\"seq\":1.5,\"case\":\"c\"}", "integer", why, sizeof(why)),
           "a fractional sequence number is refused (%s)", why);
    TAP_OK(refused("{\"msg\":\"begin\",\"seq\":-1,\"case\":\"c\"}", NULL, why, sizeof(why)),
           "a negative sequence number is refused");
    TAP_OK(refused("{\"msg\":\"begin\",\"seq\":2,\"case\":5}", "string", why, sizeof(why)),
           "a member of the wrong type is refused (%s)", why);
    TAP_OK(refused("{\"msg\":\"hello\",\"seq\":2}", "unknown", why, sizeof(why)),
           "an unknown message is refused (%s)", why);
    TAP_OK(refused("{\"seq\":2}", NULL, why, sizeof(why)), "a message without a name is refused");
    int fd = ic_ipc_child_fd(), other = fd;
    for (int i = 0; i < 20 && other == fd; i++)
        other = ic_ipc_child_fd();
    TAP_OK(fd >= 100 && fd < 1000 && other != fd,
           "the worker's descriptor is drawn at random in [100, 1000) (%d, %d)", fd, other);
}

/* Whether `fd` is open and is the read end of the pipe whose write end is `write_end`: a byte
 * written there comes out of it. */
static bool same_pipe(int fd, int write_end)
{
    char c = 0;
    return write(write_end, "x", 1) == 1 && read(fd, &c, 1) == 1 && c == 'x';
}

/* A "copy" request brings descriptors: they arrive with the frame, in order, only where the
 * buffer takes them; elsewhere they are closed, not leaked. */
static void test_descriptors(void)
{
    int sv[2], p1[2], p2[2], p3[2];
    char why[256];
    int error = 0;
    TAP_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(p1) == 0 && pipe(p2) == 0 &&
               pipe(p3) == 0,
           "a socketpair and three pipes");
    cJSON *copy = ic_message_new(IC_MSG_COPY, 9);
    cJSON_AddNumberToObject(copy, "slot", 1);
    const int ends[3] = {p1[0], p2[0], p3[0]};
    TAP_OK(ic_ipc_send_fds(sv[1], copy, ends, 3) == 0 && ic_ipc_send(sv[1], copy) == 0,
           "a frame with three descriptors, then one without");
    struct ic_framebuf buf = {.accept_fds = true};
    cJSON *a = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    int got[IC_IPC_MAX_FDS] = {-1, -1, -1, -1};
    int n = ic_framebuf_take_fds(&buf, got, IC_IPC_MAX_FDS);
    TAP_OK(a && cJSON_Compare(a, copy, true) && n == 3,
           "the frame comes back whole, with three descriptors (%d)", n);
    TAP_OK(n == 3 && same_pipe(got[0], p1[1]) && same_pipe(got[1], p2[1]) &&
               same_pipe(got[2], p3[1]) && got[0] != p1[0],
           "they are the descriptors sent, in their order, as new numbers");
    for (int i = 0; i < n; i++)
        close(got[i]);
    cJSON *b = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    TAP_OK(b && ic_framebuf_take_fds(&buf, got, IC_IPC_MAX_FDS) == 0,
           "the next frame brings none");
    cJSON_Delete(a);
    cJSON_Delete(b);
    ic_framebuf_release(&buf);

    /* Where the buffer takes none (the supervisor's side), they are closed as they arrive:
     * the write end then sees no reader once our copies of the read end are closed. */
    struct ic_framebuf plain = {0};
    TAP_OK(ic_ipc_send_fds(sv[1], copy, ends, 1) == 0, "a descriptor sent to a side that takes none");
    a = ic_ipc_receive(sv[0], &plain, &error, why, sizeof(why));
    close(p1[0]);
    TAP_OK(a && ic_framebuf_take_fds(&plain, got, IC_IPC_MAX_FDS) == 0 &&
               write(p1[1], "x", 1) < 0,
           "the frame is read, and the descriptor was closed (its pipe has no reader left)");
    cJSON_Delete(a);
    ic_framebuf_release(&plain);
    TAP_OK(ic_ipc_send_fds(sv[1], copy, ends, 0) == IC_EINVAL &&
               ic_ipc_send_fds(sv[1], copy, ends, IC_IPC_MAX_FDS + 1) == IC_EINVAL,
           "no descriptors, or more than a frame may bring, is refused");
    cJSON_Delete(copy);
    close(sv[0]);
    close(sv[1]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
    close(p3[0]);
    close(p3[1]);
}

/* ic_ipc_send prints a message itself (not with cJSON): every kind of item must come back
 * from the frame as it was sent, and a tree cJSON could not print is refused, not framed. */
static void test_printing(void)
{
    int sv[2];
    char why[256];
    int error = 0;
    struct ic_framebuf buf = {0};
    TAP_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "a socketpair for printing");
    cJSON *sent = ic_message_new(IC_MSG_END, 9007199254740991ull);
    cJSON *nested = cJSON_CreateObject();
    cJSON *list = cJSON_CreateArray();
    const double numbers[] = {0, 1, -1, 123456789, 0.5, -2.25, 0.1, 1e-7, 3.0e300, 1.0 / 3};
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
        cJSON_AddItemToArray(list, cJSON_CreateNumber(numbers[i]));
    cJSON_AddItemToArray(list, cJSON_CreateNull());
    cJSON_AddItemToArray(list, cJSON_CreateTrue());
    cJSON_AddItemToArray(list, cJSON_CreateFalse());
    cJSON_AddItemToArray(list, cJSON_CreateArray());
    cJSON_AddItemToArray(list, cJSON_CreateObject());
    cJSON_AddItemToObject(nested, "list", list);
    cJSON_AddStringToObject(nested, "quote \" back\\slash", "tab\tnew\nline \x01 \xc3\xa9 \"q\"");
    cJSON_AddStringToObject(nested, "", "");
    cJSON_AddItemToObject(sent, "nested", nested);
    cJSON_AddRawToObject(sent, "raw", "{\"a\":[1,2.5,\"x\"]}");
    TAP_OK(ic_ipc_send(sv[1], sent) == 0, "a message with every kind of item is sent");
    cJSON *got = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    cJSON *raw = cJSON_Parse("{\"a\":[1,2.5,\"x\"]}");
    cJSON *expected = cJSON_Duplicate(sent, true);
    cJSON_ReplaceItemInObjectCaseSensitive(expected, "raw", raw);
    TAP_OK(got && cJSON_Compare(got, expected, true),
           "it comes back as sent: numbers, escapes, UTF-8, empty containers, a raw item");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(got, "seq");
    TAP_OK(cJSON_IsNumber(seq) && seq->valuedouble == 9007199254740991.0,
           "an integer of 53 bits keeps every digit");
    const cJSON *third = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(got, "nested"), "list"),
        9);
    TAP_OK(cJSON_IsNumber(third) && third->valuedouble == 1.0 / 3,
           "a fraction without a short form reads back as the same double");
    cJSON_Delete(got);
    cJSON_Delete(expected);

    cJSON *broken = ic_message_new(IC_MSG_END, 1);
    cJSON *bare = cJSON_CreateRaw("1");
    free(bare->valuestring);
    bare->valuestring = NULL;
    cJSON_AddItemToObject(broken, "raw", bare);
    TAP_OK(ic_ipc_send(sv[1], broken) == IC_EINVAL, "a raw item without text is refused");
    cJSON_Delete(broken);
    close(sv[1]);
    got = ic_ipc_receive(sv[0], &buf, &error, why, sizeof(why));
    TAP_OK(!got && error == 0, "and nothing of it was written");
    cJSON_Delete(sent);
    ic_framebuf_release(&buf);
    close(sv[0]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a write to a pipe without a reader fails with EPIPE instead */
    test_frames();
    test_printing();
    test_table();
    test_descriptors();
    return tap_done();
}
