#include "ic_text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "ic_error.h"

#define IC_UTF8_BAD (-1) /* an ill-formed subpart: one U+FFFD */
#define IC_UTF8_CUT (-2) /* a valid start that runs into the end of the input: dropped */

static const char ic_replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Decodes the character at s[0..len), len > 0. Returns its code point and sets *ret_len to
 * the bytes it spans; for IC_UTF8_BAD *ret_len is the maximal subpart (at least 1), for
 * IC_UTF8_CUT the rest of the input. */
static long ic_utf8_decode(const unsigned char *s, size_t len, size_t *ret_len)
{
    unsigned char lead = s[0];
    unsigned char second_lo = 0x80, second_hi = 0xBF;
    size_t trail;
    long cp;

    if (lead < 0x80) {
        *ret_len = 1;
        return lead;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
        trail = 1;
        cp = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        trail = 2;
        cp = lead & 0x0F;
        if (lead == 0xE0)
            second_lo = 0xA0; /* no overlong forms */
        if (lead == 0xED)
            second_hi = 0x9F; /* no surrogates */
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        trail = 3;
        cp = lead & 0x07;
        if (lead == 0xF0)
            second_lo = 0x90;
        if (lead == 0xF4)
            second_hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        *ret_len = 1;
        return IC_UTF8_BAD;
    }
    /* An encoded surrogate is one lost character (a lone surrogate Python passed through),
     * so one U+FFFD, and its first two bytes at the very end are a cut like any other. */
    if (lead == 0xED && len >= 2 && s[1] >= 0xA0 && s[1] <= 0xBF) {
        if (len == 2) {
            *ret_len = 2;
            return IC_UTF8_CUT;
        }
        if (s[2] >= 0x80 && s[2] <= 0xBF) {
            *ret_len = 3;
            return IC_UTF8_BAD;
        }
    }
    for (size_t i = 1; i <= trail; i++) {
        if (i >= len) {
            *ret_len = len;
            return IC_UTF8_CUT;
        }
        unsigned char lo = i == 1 ? second_lo : 0x80;
        unsigned char hi = i == 1 ? second_hi : 0xBF;
        if (s[i] < lo || s[i] > hi) {
            *ret_len = i;
            return IC_UTF8_BAD;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *ret_len = trail + 1;
    return cp;
}

size_t ic_utf8_valid_prefix(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t pos = 0;
    while (pos < len) {
        /* ASCII runs are the common case: skip them without decoding, eight bytes at a time
         * while no byte has its top bit set and none is NUL. */
        uint64_t word;
        for (; len - pos >= sizeof(word); pos += sizeof(word)) {
            memcpy(&word, u + pos, sizeof(word));
            if (ic_word_has_top_bit(word) || ic_word_has_byte_below(word, 1))
                break;
        }
        if (pos >= len)
            break;
        if (u[pos] >= 0x01 && u[pos] < 0x80) {
            pos++;
            continue;
        }
        size_t n;
        long cp = ic_utf8_decode(u + pos, len - pos, &n);
        if (cp <= 0) /* ill-formed, cut, or a NUL that repair would replace */
            return pos;
        pos += n;
    }
    return len;
}

bool ic_utf8_valid(const char *s, size_t len)
{
    return ic_utf8_valid_prefix(s, len) == len;
}

size_t ic_utf8_repair(char *dst, size_t dst_size, const char *src, size_t src_len,
                      size_t *ret_consumed)
{
    const unsigned char *u = (const unsigned char *)src;
    size_t out = 0, pos = 0;

    if (dst_size == 0) {
        if (ret_consumed)
            *ret_consumed = 0;
        return 0;
    }
    while (pos < src_len) {
        size_t n;
        long cp = ic_utf8_decode(u + pos, src_len - pos, &n);
        if (cp == IC_UTF8_CUT)
            break; /* the trace of a cut: not shown, so not consumed */
        const char *piece = (cp == IC_UTF8_BAD || cp == 0) ? ic_replacement : src + pos;
        size_t piece_len = (cp == IC_UTF8_BAD || cp == 0) ? 3 : n;
        if (out + piece_len + 1 > dst_size)
            break;
        memcpy(dst + out, piece, piece_len);
        out += piece_len;
        pos += n;
    }
    dst[out] = '\0';
    if (ret_consumed)
        *ret_consumed = pos;
    return out;
}

size_t ic_utf8_floor(const char *s, size_t len, size_t limit)
{
    if (limit >= len)
        return len;
    while (limit > 0 && ((unsigned char)s[limit] & 0xC0) == 0x80)
        limit--;
    return limit;
}

/* Repairs without a second buffer: each ill-formed subpart becomes '?', which never makes the
 * text longer. Used only when memory for a copy is not there. */
static void ic_utf8_repair_shrinking(char *buf, size_t len)
{
    const unsigned char *u = (const unsigned char *)buf;
    size_t out = 0, pos = 0;
    while (pos < len) {
        size_t n;
        long cp = ic_utf8_decode(u + pos, len - pos, &n);
        if (cp == IC_UTF8_CUT)
            break;
        if (cp == IC_UTF8_BAD || cp == 0)
            buf[out++] = '?';
        else {
            memmove(buf + out, buf + pos, n);
            out += n;
        }
        pos += n;
    }
    buf[out] = '\0';
}

size_t ic_text_cut_marker(char *buf, size_t size, size_t cut)
{
    int n = snprintf(buf, size, " \xE2\x80\xA6 [%zu %s cut]", cut, cut == 1 ? "byte" : "bytes");
    if (n < 0 || size == 0)
        return 0;
    return (size_t)n < size ? (size_t)n : size - 1;
}

/* Copies src[0..src_len), the first src_len bytes of a text of `total` bytes, into dst:
 * repaired, and ending with the cut marker when any of the text is not shown. */
static void ic_text_copy_part(char *dst, size_t dst_size, const char *src, size_t src_len,
                              size_t total)
{
    char marker[IC_TEXT_MARKER_MAX + 1];
    size_t consumed;

    if (dst_size == 0)
        return;
    size_t out = ic_utf8_repair(dst, dst_size, src, src_len, &consumed);
    if (consumed == src_len && src_len >= total)
        return;
    /* Something is not shown: make room for the marker. Its length for `total` bounds its
     * length for any smaller count. */
    size_t marker_len = ic_text_cut_marker(marker, sizeof(marker), total);
    if (dst_size <= marker_len + 1)
        return; /* no room for a marker: the plain cut stands */
    out = ic_utf8_repair(dst, dst_size - marker_len, src, src_len, &consumed);
    ic_text_cut_marker(dst + out, dst_size - out, total - consumed);
}

void ic_text_copy(char *dst, size_t dst_size, const char *src, size_t src_len)
{
    ic_text_copy_part(dst, dst_size, src, src_len, src_len);
}

/* Repairs buf[0..len) in place (capacity size) through a copy of it; `total` as in
 * ic_text_copy_part, or 0 to cut silently where the repaired text no longer fits. */
static void ic_text_settle(char *buf, size_t size, size_t len, size_t total)
{
    char stack[2048];
    char *copy = len < sizeof(stack) ? stack : malloc(len + 1);
    if (!copy) {
        ic_utf8_repair_shrinking(buf, len);
        return;
    }
    memcpy(copy, buf, len);
    if (total)
        ic_text_copy_part(buf, size, copy, len, total);
    else
        ic_utf8_repair(buf, size, copy, len, NULL);
    if (copy != stack)
        free(copy);
}

void ic_utf8_repair_in_place(char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t len = strnlen(buf, size - 1);
    buf[len] = '\0';
    if (!ic_utf8_valid(buf, len))
        ic_text_settle(buf, size, len, 0);
}

void ic_text_fix_formatted(char *buf, size_t size, int formatted_len)
{
    if (size == 0)
        return;
    size_t len = strnlen(buf, size - 1);
    buf[len] = '\0';
    if (formatted_len < 0 || (size_t)formatted_len < size) {
        ic_utf8_repair_in_place(buf, size);
        return;
    }
    ic_text_settle(buf, size, len, (size_t)formatted_len);
}

/* --- Growable buffers ----------------------------------------------------------------------- */

void ic_text_buf_init(struct ic_text_buf *buf)
{
    memset(buf, 0, sizeof(*buf));
}

void ic_text_buf_release(struct ic_text_buf *buf)
{
    free(buf->data);
    memset(buf, 0, sizeof(*buf));
}

const char *ic_text_buf_str(const struct ic_text_buf *buf)
{
    return buf->data ? buf->data : "";
}

static int ic_text_buf_reserve(struct ic_text_buf *buf, size_t extra)
{
    if (buf->status)
        return buf->status;
    if (extra > SIZE_MAX - buf->len - 1) {
        buf->status = IC_ENOMEM;
        return buf->status;
    }
    size_t need = buf->len + extra + 1;
    if (need <= buf->cap)
        return 0;
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *data = realloc(buf->data, cap);
    if (!data) {
        buf->status = IC_ENOMEM;
        return buf->status;
    }
    buf->data = data;
    buf->cap = cap;
    return 0;
}

int ic_text_buf_add(struct ic_text_buf *buf, const char *data, size_t len)
{
    if (ic_text_buf_reserve(buf, len) < 0)
        return buf->status;
    memcpy(buf->data + buf->len, data, len);
    buf->len += len;
    buf->data[buf->len] = '\0';
    return 0;
}

int ic_text_buf_adds(struct ic_text_buf *buf, const char *s)
{
    return ic_text_buf_add(buf, s, strlen(s));
}

int ic_text_buf_addf(struct ic_text_buf *buf, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(again);
        if (!buf->status)
            buf->status = IC_EINVAL;
        return buf->status;
    }
    if (ic_text_buf_reserve(buf, (size_t)n) < 0) {
        va_end(again);
        return buf->status;
    }
    vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, again);
    va_end(again);
    buf->len += (size_t)n;
    return 0;
}

void ic_text_buf_truncate(struct ic_text_buf *buf, size_t len)
{
    if (buf->data && len < buf->len) {
        buf->len = len;
        buf->data[len] = '\0';
    }
}

/* --- Escaping ------------------------------------------------------------------------------- */

/* Characters XML 1.0 forbids (C0 but tab, LF, CR; U+FFFE, U+FFFF) or discourages (DEL, C1,
 * noncharacters), which HTML parsers also report as errors. */
static bool ic_text_unwanted(long cp)
{
    if (cp < 0x20)
        return cp != '\t' && cp != '\n' && cp != '\r';
    if (cp >= 0x7F && cp <= 0x9F)
        return true;
    if (cp >= 0xFDD0 && cp <= 0xFDEF)
        return true;
    return (cp & 0xFFFE) == 0xFFFE;
}

/* ASCII punctuation that can open or close a Markdown construct somewhere in GitHub's or
 * GitLab's dialect. Left out: , ; ? / " ' which mean nothing outside a construct these
 * escapes already break (a link title needs an unescaped bracket). */
static bool ic_markdown_special(long cp)
{
    return cp < 0x80 && cp > 0 && strchr("!#$%&()*+-.:<=>@[\\]^_`{|}~", (int)cp) != NULL;
}

/* Characters a terminal acts on rather than shows: C0 controls, DEL and C1 controls (escape
 * sequences, cursor moves, 8-bit CSI), the line and paragraph separators, and the
 * bidirectional controls, which reorder the text around them. */
static bool ic_terminal_special(long cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
           cp == 0x200F || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* The IC_ESCAPE_TERMINAL form of code point cp, or 0 when it stands as it is. */
static size_t ic_terminal_piece(long cp, char piece[8])
{
    const char *named = cp == '\\'   ? "\\\\"
                        : cp == '\n' ? "\\n"
                        : cp == '\r' ? "\\r"
                        : cp == '\t' ? "\\t"
                                     : NULL;
    if (named) {
        memcpy(piece, named, 2);
        return 2;
    }
    if (!ic_terminal_special(cp))
        return 0;
    int n = cp < 0x80 ? snprintf(piece, 8, "\\x%02lx", (unsigned long)cp)
                      : snprintf(piece, 8, "\\u%04lx", (unsigned long)cp);
    return n > 0 ? (size_t)n : 0;
}

/* The escaped form of the character at s[0..len) in piece (at most 8 bytes); *ret_len gets
 * the input bytes it stands for. Returns the length of piece: 0 for a cut sequence. */
static size_t ic_escape_piece(const unsigned char *s, size_t len, enum ic_text_escape how,
                              char piece[8], size_t *ret_len)
{
    const char *entity = NULL;
    size_t n;
    long cp = ic_utf8_decode(s, len, &n);
    *ret_len = n;
    if (cp == IC_UTF8_CUT)
        return 0;
    if (cp == IC_UTF8_BAD || cp == 0) {
        memcpy(piece, ic_replacement, 3);
        return 3;
    }
    if (how == IC_ESCAPE_TERMINAL) {
        size_t escaped = ic_terminal_piece(cp, piece);
        if (escaped)
            return escaped;
        memcpy(piece, s, n);
        return n;
    }
    if (how != IC_ESCAPE_PLAIN && ic_text_unwanted(cp)) {
        memcpy(piece, ic_replacement, 3);
        return 3;
    }
    switch (how) {
    case IC_ESCAPE_PLAIN:
    case IC_ESCAPE_TERMINAL:
        break;
    case IC_ESCAPE_XML_ATTR:
    case IC_ESCAPE_XML_TEXT:
        entity = cp == '&'    ? "&amp;"
                 : cp == '<'  ? "&lt;"
                 : cp == '>'  ? "&gt;"
                 : cp == '\r' ? "&#13;"
                              : NULL;
        if (how == IC_ESCAPE_XML_ATTR && !entity)
            entity = cp == '"'    ? "&quot;"
                     : cp == '\'' ? "&apos;"
                     : cp == '\t' ? "&#9;"
                     : cp == '\n' ? "&#10;"
                                  : NULL;
        break;
    case IC_ESCAPE_HTML:
        entity = cp == '&'    ? "&amp;"
                 : cp == '<'  ? "&lt;"
                 : cp == '>'  ? "&gt;"
                 : cp == '"'  ? "&quot;"
                 : cp == '\'' ? "&#39;"
                              : NULL;
        break;
    case IC_ESCAPE_MARKDOWN:
        if (cp == '\r' || cp == '\n') {
            if (cp == '\r' && len > 1 && s[1] == '\n')
                *ret_len = 2; /* CRLF is one line break */
            entity = "<br>";
        } else if (cp == '\t') {
            entity = " ";
        } else if (ic_markdown_special(cp)) {
            piece[0] = '\\';
            piece[1] = (char)cp;
            return 2;
        }
        break;
    }
    if (entity) {
        size_t elen = strlen(entity);
        memcpy(piece, entity, elen);
        return elen;
    }
    memcpy(piece, s, n);
    return n;
}

int ic_text_buf_add_escaped(struct ic_text_buf *buf, const char *s, size_t len,
                            enum ic_text_escape how, size_t cap)
{
    const unsigned char *u = (const unsigned char *)s;
    char marker[IC_TEXT_MARKER_MAX + 1];
    char piece[8];
    size_t start = buf->len;

    if (buf->status)
        return buf->status;
    if (cap < IC_TEXT_CAP_MIN)
        cap = IC_TEXT_CAP_MIN;
    /* Room kept for the marker, escaped, with a count no smaller than any real one. */
    size_t marker_len = ic_text_cut_marker(marker, sizeof(marker), len);
    size_t reserve = 0;
    for (size_t i = 0, n; i < marker_len; i += n)
        reserve +=
            ic_escape_piece((const unsigned char *)marker + i, marker_len - i, how, piece, &n);
    /* The last point where the marker would still fit after what was appended. */
    size_t safe_out = 0, safe_pos = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t n;
        size_t piece_len = ic_escape_piece(u + pos, len - pos, how, piece, &n);
        size_t out = buf->len - start;
        if (out + piece_len > cap)
            goto cut;
        if (ic_text_buf_add(buf, piece, piece_len) < 0)
            return buf->status;
        pos += n;
        if (out + piece_len <= cap - reserve) {
            safe_out = out + piece_len;
            safe_pos = pos;
        }
    }
    return 0;

cut:
    ic_text_buf_truncate(buf, start + safe_out);
    marker_len = ic_text_cut_marker(marker, sizeof(marker), len - safe_pos);
    for (size_t i = 0, n; i < marker_len; i += n) {
        size_t piece_len =
            ic_escape_piece((const unsigned char *)marker + i, marker_len - i, how, piece, &n);
        ic_text_buf_add(buf, piece, piece_len);
    }
    return buf->status;
}

int ic_text_buf_add_escaped_str(struct ic_text_buf *buf, const char *s, enum ic_text_escape how,
                                size_t cap)
{
    if (!s)
        return buf->status;
    return ic_text_buf_add_escaped(buf, s, strlen(s), how, cap);
}

/* --- Terminals and positions ---------------------------------------------------------------- */

void ic_text_for_terminal(char *dst, size_t dst_size, const char *src)
{
    struct ic_text_buf buf;
    if (dst_size == 0)
        return;
    if (!src)
        src = "";
    ic_text_buf_init(&buf);
    if (ic_text_buf_add_escaped_str(&buf, src, IC_ESCAPE_TERMINAL, dst_size - 1) == 0) {
        /* Only a buffer below the smallest cap gets more than it holds: cut it plainly. */
        size_t len = ic_utf8_floor(ic_text_buf_str(&buf), buf.len, dst_size - 1);
        memcpy(dst, ic_text_buf_str(&buf), len);
        dst[len] = '\0';
    } else {
        /* No memory for the escaped copy: printable ASCII stays, anything else is '?'. */
        size_t used = 0;
        for (const char *p = src; *p && used + 1 < dst_size; p++)
            dst[used++] = *p >= 0x20 && *p < 0x7F && *p != '\\' ? *p : '?';
        dst[used] = '\0';
    }
    ic_text_buf_release(&buf);
}

void ic_text_line_column(const char *text, size_t len, size_t offset, size_t *ret_line,
                         size_t *ret_column)
{
    size_t line = 1, column = 1;
    if (offset > len)
        offset = len;
    for (size_t i = 0; i < offset; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\n') {
            line++;
            column = 1;
        } else if ((ch & 0xC0) != 0x80) { /* a continuation byte is part of the character before */
            column++;
        }
    }
    *ret_line = line;
    *ret_column = column;
}

/* --- Files ---------------------------------------------------------------------------------- */

bool ic_path_is_gzip(const char *path)
{
    size_t len = strlen(path);
    return len > 3 && strcmp(path + len - 3, ".gz") == 0;
}

/* A FILE over a gzFile (fopencookie), so that every reader and writer of FILEs reads and
 * writes gzip without knowing it. */
static ssize_t ic_gz_read(void *cookie, char *buf, size_t size)
{
    int got = gzread(cookie, buf, size > INT_MAX ? INT_MAX : (unsigned)size);
    return got < 0 ? -1 : got;
}

static ssize_t ic_gz_write(void *cookie, const char *buf, size_t size)
{
    int put = size ? gzwrite(cookie, buf, size > INT_MAX ? INT_MAX : (unsigned)size) : 0;
    return put > 0 ? put : 0; /* 0: an error, to stdio */
}

static int ic_gz_close(void *cookie)
{
    return gzclose(cookie) == Z_OK ? 0 : EOF;
}

FILE *ic_gz_fdopen(int fd, bool write)
{
    gzFile gz = gzdopen(fd, write ? "wb6" : "rb");
    if (!gz)
        return NULL;
    gzbuffer(gz, 1 << 17);
    cookie_io_functions_t io = {.read = write ? NULL : ic_gz_read,
                                .write = write ? ic_gz_write : NULL,
                                .seek = NULL,
                                .close = ic_gz_close};
    FILE *file = fopencookie(gz, write ? "w" : "r", io);
    if (!file)
        gzclose(gz);
    return file;
}

FILE *ic_file_private(FILE *file)
{
    if (file)
        __fsetlocking(file, FSETLOCKING_BYCALLER);
    return file;
}

/* Opens the temporary file `tmp` for writing, through gzip when `gzip`; *ret_fd is the
 * descriptor to sync (zlib closes the one it writes, a duplicate). NULL with errno set. */
static FILE *ic_open_temporary(const char *tmp, bool gzip, int *ret_fd)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    *ret_fd = fd;
    if (fd < 0)
        return NULL;
    if (!gzip) {
        /* A buffer of 256 KiB, not the file system's block: --all's report is 117 MB, which
         * stdio's 4 KiB buffer wrote in 28 000 system calls. Without it, stdio's own. */
        FILE *file = ic_file_private(fdopen(fd, "wb"));
        if (file)
            (void)setvbuf(file, NULL, _IOFBF, (size_t)1 << 18);
        return file;
    }
    int data_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    FILE *file = data_fd >= 0 ? ic_file_private(ic_gz_fdopen(data_fd, true)) : NULL;
    if (!file && data_fd >= 0)
        close(data_fd);
    if (!file && errno == 0)
        errno = ENOMEM;
    return file;
}

void ic_text_write_early(FILE *file)
{
    int fd = fileno(file); /* -1 for a compressed file (a stream of its own) */
    if (fd >= 0 && fflush(file) == 0)
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

int ic_text_write_atomic_with(const char *path, ic_text_writer_fn writer, void *context, char *err,
                              size_t err_size)
{
    size_t tmp_size = strlen(path) + 32;
    char *tmp = malloc(tmp_size);
    int rc = IC_EIO, fd = -1;

    if (!tmp) {
        snprintf(err, err_size, "out of memory while writing %s", path);
        return IC_ENOMEM;
    }
    /* The rename below replaces whatever is at `path`: only a regular file may be there
     * (never a link, a device or a directory someone gave by mistake). */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s is not a regular file: interopcheck does not replace it", path);
        goto done;
    }
    snprintf(tmp, tmp_size, "%s.tmp.%ld", path, (long)getpid());
    bool gzip = ic_path_is_gzip(path);
    errno = 0;
    FILE *file = ic_open_temporary(tmp, gzip, &fd);
    if (!file) {
        snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
        goto fail;
    }
    errno = 0;
    int written = writer(file, context);
    bool ok = written == 0 && fflush(file) == 0;
    if (!gzip)
        ok = ok && fsync(fileno(file)) == 0;
    ok = fclose(file) == 0 && ok; /* a gzip stream ends here, written through to fd */
    if (gzip)
        ok = ok && fsync(fd) == 0;
    else
        fd = -1; /* fclose closed it */
    if (!ok) {
        if (written == IC_ENOMEM)
            snprintf(err, err_size, "out of memory while writing %s", path);
        else
            snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
        rc = written == IC_ENOMEM ? IC_ENOMEM : IC_EIO;
        goto fail;
    }
    if (fd >= 0 && close(fd) != 0) {
        fd = -1;
        snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        snprintf(err, err_size, "cannot move %s to %s: %s", tmp, path, strerror(errno));
        goto fail;
    }
    rc = 0;
    goto done;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
done:
    free(tmp);
    return rc;
}

struct ic_bytes {
    const char *data;
    size_t len;
    bool newline;
};

static int ic_write_bytes(FILE *file, void *context)
{
    const struct ic_bytes *bytes = context;
    if ((bytes->len > 0 && fwrite(bytes->data, 1, bytes->len, file) != bytes->len) ||
        (bytes->newline && fputc('\n', file) < 0))
        return IC_EIO;
    return 0;
}

int ic_text_write_atomic(const char *path, const char *data, size_t len, char *err, size_t err_size)
{
    struct ic_bytes bytes = {data, len, false};
    return ic_text_write_atomic_with(path, ic_write_bytes, &bytes, err, err_size);
}

int ic_text_write_atomic_line(const char *path, const char *text, char *err, size_t err_size)
{
    struct ic_bytes bytes = {text, strlen(text), true};
    return ic_text_write_atomic_with(path, ic_write_bytes, &bytes, err, err_size);
}

size_t ic_text_decimal(char out[20], uint64_t value)
{
    char digits[20];
    size_t at = sizeof(digits);
    do {
        digits[--at] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    memcpy(out, digits + at, sizeof(digits) - at);
    return sizeof(digits) - at;
}

const char *ic_text_article(const char *word)
{
    char first = word ? (char)tolower((unsigned char)word[0]) : '\0';
    bool vowel = first && strchr("aeio", first);
    bool un = first == 'u' && tolower((unsigned char)word[1]) == 'n';
    return vowel || un ? "an" : "a";
}

int ic_table_find(const void *table, size_t count, size_t stride, size_t offset, const char *name)
{
    const char *row = table;
    for (size_t i = 0; name && i < count; i++, row += stride) {
        const char *candidate = *(const char *const *)(row + offset);
        /* The first byte first: a name read back is looked up for each case (a result's rule
         * among some hundred), and most rows differ there. */
        if (candidate && candidate[0] == name[0] && strcmp(candidate, name) == 0)
            return (int)i;
    }
    return IC_ENOTFOUND;
}

void *ic_grow(void *items, size_t *capacity, size_t count, size_t item_size, size_t first)
{
    if (count < *capacity)
        return items;
    size_t grown_capacity = *capacity ? *capacity * 2 : first;
    char *grown = realloc(items, grown_capacity * item_size);
    if (!grown)
        return NULL;
    memset(grown + *capacity * item_size, 0, (grown_capacity - *capacity) * item_size);
    *capacity = grown_capacity;
    return grown;
}

uint64_t ic_text_hash(const char *text)
{
    uint64_t hash = 1469598103934665603ULL;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        hash = (hash ^ *c) * 1099511628211ULL;
    return hash;
}
