/*
 * ic_text: text safety for everything interopcheck writes. Library text (exception messages,
 * probe notes, a dead worker's last output) can hold anything: invalid UTF-8, control
 * characters, markup, quotes, megabytes. Every writer passes it through here, and so do the
 * fixed-size buffers where such text enters results.
 *
 * Contract
 * - UTF-8 repair: the output is always valid UTF-8. Each ill-formed sequence becomes one
 *   U+FFFD per maximal ill-formed subpart (the Unicode recommendation, what Python's
 *   "replace" error handler does), with one exception: the three-byte encoding of a surrogate
 *   (ED A0..BF 80..BF, which Python's "surrogatepass" writes for a lone surrogate) is one
 *   character lost, so it becomes one U+FFFD. A sequence that is a valid start but runs into
 *   the end of the input is the trace of a cut (snprintf into a fixed buffer) and is removed.
 *   A NUL inside a counted input cannot live in a C string and becomes U+FFFD.
 * - Cuts happen on character boundaries only, and a cut that loses text says so with a
 *   visible marker, " … [N bytes cut]", N the bytes of the input not shown.
 * - Fixed buffers (ic_text_copy, ic_text_fix_formatted, ic_utf8_repair_in_place) stay
 *   NUL-terminated within their size and never allocate more than a copy of themselves.
 * - ic_text_article gives the article for a name the tool prints ("an int8 array").
 * - Two helpers every table and array of the tool shares live here too: ic_table_find (a row
 *   by its name) and ic_grow (room for one more item); neither keeps any state.
 * - struct ic_text_buf is a growable, always NUL-terminated string. Appending returns 0 or
 *   IC_ENOMEM; a failure is sticky (buf->status), so a writer may append freely and check
 *   once at the end.
 * - ic_text_buf_add_escaped appends library text for one output language. It repairs as it
 *   goes, so its output is valid UTF-8 whatever the input, and no escape is ever split.
 *   `cap` bounds the bytes it appends (the marker included): a longer text is cut with the
 *   marker. A cap below IC_TEXT_CAP_MIN counts as IC_TEXT_CAP_MIN; IC_TEXT_NO_CAP appends
 *   everything.
 *     IC_ESCAPE_PLAIN      repair only (text that a serializer escapes itself, as cJSON does).
 *     IC_ESCAPE_XML_TEXT   XML 1.0 character data: & < > as entities (so "]]>" never
 *                          appears), CR as &#13; (parsers would turn it into LF).
 *     IC_ESCAPE_XML_ATTR   a quoted XML attribute value: also " ' and tab, LF, CR as
 *                          references (attribute normalization would turn them into spaces).
 *     IC_ESCAPE_HTML       HTML text and quoted attribute values: & < > " ' as references.
 *     IC_ESCAPE_MARKDOWN   GitHub-flavoured Markdown, in a table cell or in inline text alike:
 *                          every ASCII punctuation character that can start or end a construct
 *                          (emphasis, code, links, autolinks, HTML tags and entities, tables,
 *                          headings, lists, quotes, math, emoji) is backslash-escaped, and a
 *                          line break (LF, CR or CRLF) becomes <br>, so the text never ends a
 *                          line, a cell or a block. It renders as the original characters.
 *     IC_ESCAPE_TERMINAL   one line of a terminal: nothing a terminal acts on gets through.
 *                          A backslash is doubled, so every escape below is unambiguous; tab,
 *                          LF and CR are \t \n \r; other C0 controls and DEL are \xNN (ESC is
 *                          \x1b, so an ANSI sequence shows as text); C1 controls, the line and
 *                          paragraph separators and the bidirectional controls (U+061C,
 *                          U+200E/F, U+202A..U+202E, U+2066..U+2069, which reorder what a
 *                          terminal shows) are \uNNNN, the code point in lower-case hex.
 *   In XML, HTML and Markdown, characters XML 1.0 forbids or discourages and HTML reports as
 *   parse errors become U+FFFD: C0 controls other than tab, LF and CR, DEL, C1 controls, and the
 *   noncharacters U+FDD0..U+FDEF and U+xxFFFE/U+xxFFFF. In Markdown a tab becomes a space.
 * - Caps: one piece of library text keeps at most IC_TEXT_FIELD_CAP bytes (the marker included)
 *   wherever it is stored whole (a probe's load() info, a loaded report) or shown whole (the
 *   dashboard); views that show less cap lower. A script (a finding's reproducer) is kept whole
 *   up to IC_TEXT_SCRIPT_CAP bytes and refused beyond: a script that was cut does not run.
 * - ic_text_for_terminal fills a fixed buffer with IC_ESCAPE_TERMINAL text, cut with the marker
 *   where it does not fit: a message that quotes library text (or text read from a file) on
 *   stdout or stderr passes it through here first.
 * - ic_text_line_column turns a byte offset into the line and column an editor shows (both from
 *   1; the column counts characters), for readers that point at a place in a file.
 * - ic_text_write_atomic writes a file through a temporary file in the same directory and a
 *   rename, so a reader never sees half of it and a failure leaves the old file untouched.
 */
#ifndef IC_TEXT_H
#define IC_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest cut marker, " … [18446744073709551615 bytes cut]", without escapes. */
#define IC_TEXT_MARKER_MAX 40
/* The smallest cap ic_text_buf_add_escaped honours: room for an escaped marker. */
#define IC_TEXT_CAP_MIN    64
#define IC_TEXT_NO_CAP     SIZE_MAX
/* The most bytes one piece of library text keeps where it is stored or shown whole: 8 KiB. */
#define IC_TEXT_FIELD_CAP  (8 * 1024)
/* The most bytes of a script that is kept whole; a longer one is refused. */
#define IC_TEXT_SCRIPT_CAP (64 * 1024)

/* --- UTF-8 ---------------------------------------------------------------------------------- */

/* Room for one more item in an array that doubles as it fills, from `first` items: returns
 * `items` when it has room for count + 1, a grown copy (with *capacity updated) when it had
 * not (the new room zeroed), or NULL when memory ran out, `items` and *capacity then unchanged
 * and still valid. */
void *ic_grow(void *items, size_t *capacity, size_t count, size_t item_size, size_t first);

/* `value` in decimal into `out` (not terminated): its length (1 to 20). Written digit by
 * digit: the dashboard's millions of indices, the stream's durations and the channel's
 * numbers are several times faster so than through printf. */
size_t ic_text_decimal(char out[20], uint64_t value);

/* "an" or "a", the article before `word` in the tool's sentences, judged by its spelling:
 * "an" before a, e, i, o and "un" ("an int8", "an unnamed"), "a" otherwise, "u" before
 * anything but "n" included ("a uint8": you-int). Never NULL. */
const char *ic_text_article(const char *word);

/* Word-at-a-time scans (eight bytes of text read as one uint64_t, with memcpy), for text the
 * tool writes or checks a case at a time. Each test is exact for the word as a whole:
 * (x - n * 0x01..) & ~x & 0x80.. is nonzero iff some byte of x is below n (0 < n <= 0x80; a
 * byte of 0x80 or more never counts). */
static inline bool ic_word_has_byte_below(uint64_t word, unsigned n)
{
    const uint64_t ones = 0x0101010101010101ull, tops = 0x8080808080808080ull;
    return ((word - ones * n) & ~word & tops) != 0;
}

/* Whether some byte of `word` is `byte`. */
static inline bool ic_word_has_byte(uint64_t word, unsigned char byte)
{
    return ic_word_has_byte_below(word ^ (0x0101010101010101ull * byte), 1);
}

/* Whether some byte of `word` has its top bit set (is not ASCII). */
static inline bool ic_word_has_top_bit(uint64_t word)
{
    return (word & 0x8080808080808080ull) != 0;
}

/* The index of the row whose name is `name` in a table of `count` rows, `stride` bytes apart,
 * each holding its name (a `const char *`, NULL in unused rows) `offset` bytes into the row;
 * IC_ENOTFOUND when no row has it, or `name` is NULL. Every table of names (dtypes, layouts,
 * outcomes, rules, ...) is searched this one way; IC_TABLE_FIND takes the table itself. */
int ic_table_find(const void *table, size_t count, size_t stride, size_t offset, const char *name);
#define IC_TABLE_FIND(table, member, name)                                                         \
    ic_table_find((table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0]),                 \
                  (size_t)((const char *)&(table)[0].member - (const char *)&(table)[0]), (name))
/* Defines `int fn(const char *name, enum_type *ret)`: the row of `table` whose `member` is
 * `name`, as an enum value (the row's index), or IC_ENOTFOUND. `member` is `name` for a table of
 * structs, or leave the table a plain array of names and use IC_DEFINE_NAMES_LOOKUP. */
#define IC_DEFINE_TABLE_LOOKUP(fn, enum_type, table, member)                                       \
    int fn(const char *name, enum_type *ret)                                                       \
    {                                                                                              \
        int i = IC_TABLE_FIND(table, member, name);                                                \
        if (i < 0)                                                                                 \
            return i;                                                                              \
        *ret = (enum_type)i;                                                                       \
        return 0;                                                                                  \
    }
#define IC_DEFINE_NAMES_LOOKUP(fn, enum_type, names)                                               \
    int fn(const char *name, enum_type *ret)                                                       \
    {                                                                                              \
        int i = IC_NAMES_FIND(names, name);                                                        \
        if (i < 0)                                                                                 \
            return i;                                                                              \
        *ret = (enum_type)i;                                                                       \
        return 0;                                                                                  \
    }

/* The one bounds check behind every accessor of a table indexed by an enum: the row of `table`
 * at `index` (a pointer), or NULL outside [0, count); IC_TABLE_FIELD is one member of that row,
 * or `fallback`. */
#define IC_TABLE_ROW(table, index, count)                                                          \
    ((int)(index) >= 0 && (int)(index) < (int)(count) ? &(table)[(int)(index)] : NULL)
#define IC_TABLE_FIELD(table, index, count, member, fallback)                                      \
    ((int)(index) >= 0 && (int)(index) < (int)(count) ? (table)[(int)(index)].member : (fallback))

/* The same for a plain array of names. */
#define IC_NAMES_FIND(names, name)                                                                 \
    ic_table_find((names), sizeof(names) / sizeof((names)[0]), sizeof((names)[0]), 0, (name))

/* True when s[0..len) is well-formed UTF-8 (surrogates and overlong forms are not). */
bool ic_utf8_valid(const char *s, size_t len);

/* The length of the longest prefix of s[0..len) that ic_utf8_valid accepts: the offset of the
 * first byte that is not well-formed UTF-8 (or a NUL), or len. */
size_t ic_utf8_valid_prefix(const char *s, size_t len);

/* Writes the repaired form of src[0..src_len) into dst (NUL-terminated; dst_size > 0),
 * stopping at the last whole character that fits. Returns the bytes written; *ret_consumed
 * (may be NULL) gets the bytes of src they stand for. */
size_t ic_utf8_repair(char *dst, size_t dst_size, const char *src, size_t src_len,
                      size_t *ret_consumed);

/* Repairs the string in buf (capacity size) in place. Replacements can make it longer; what
 * no longer fits is cut on a character boundary. */
void ic_utf8_repair_in_place(char *buf, size_t size);

/* The largest character boundary of the valid UTF-8 s[0..len) that is <= limit. */
size_t ic_utf8_floor(const char *s, size_t len, size_t limit);

/* --- Fixed buffers -------------------------------------------------------------------------- */

/* Writes the cut marker for `cut` bytes into buf (NUL-terminated). Returns its length. */
size_t ic_text_cut_marker(char *buf, size_t size, size_t cut);

/* Copies src[0..src_len) into dst repaired; when it does not fit, the copy ends with the cut
 * marker. */
void ic_text_copy(char *dst, size_t dst_size, const char *src, size_t src_len);

/* After (v)snprintf(buf, size, ...) returned `formatted_len`: repairs buf, and when the text
 * was cut (formatted_len >= size) makes it end with the cut marker. A negative
 * formatted_len (an encoding error) only repairs. */
void ic_text_fix_formatted(char *buf, size_t size, int formatted_len);

/* --- Growable buffers ----------------------------------------------------------------------- */

struct ic_text_buf {
    char *data; /* NUL-terminated once anything was appended; NULL before */
    size_t len;
    size_t cap;
    int status; /* 0, or the first failure (IC_ENOMEM) */
};

enum ic_text_escape {
    IC_ESCAPE_PLAIN,
    IC_ESCAPE_XML_TEXT,
    IC_ESCAPE_XML_ATTR,
    IC_ESCAPE_HTML,
    IC_ESCAPE_MARKDOWN,
    IC_ESCAPE_TERMINAL,
};

void ic_text_buf_init(struct ic_text_buf *buf);
void ic_text_buf_release(struct ic_text_buf *buf);

/* The text so far; "" when nothing was appended. */
const char *ic_text_buf_str(const struct ic_text_buf *buf);

/* Appends bytes as they are: the writer's own markup, never library text. */
int ic_text_buf_add(struct ic_text_buf *buf, const char *data, size_t len);
int ic_text_buf_adds(struct ic_text_buf *buf, const char *s);
int ic_text_buf_addf(struct ic_text_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Shortens the text to `len` bytes (no-op when it is shorter): a writer takes back what it
 * appended after a mark. */
void ic_text_buf_truncate(struct ic_text_buf *buf, size_t len);

/* Appends s[0..len) escaped for `how`, at most `cap` bytes (see the contract). */
int ic_text_buf_add_escaped(struct ic_text_buf *buf, const char *s, size_t len,
                            enum ic_text_escape how, size_t cap);

/* The same for a C string; NULL appends nothing. */
int ic_text_buf_add_escaped_str(struct ic_text_buf *buf, const char *s, enum ic_text_escape how,
                                size_t cap);

/* --- Terminals and positions ---------------------------------------------------------------- */

/* Writes `src` (NULL for "") into dst as IC_ESCAPE_TERMINAL text of at most dst_size - 1 bytes,
 * cut with the marker when it does not fit. A buffer under IC_TEXT_CAP_MIN + 1 bytes is too small
 * for the marker: the text is then cut without one. */
void ic_text_for_terminal(char *dst, size_t dst_size, const char *src);

/* The line and column (both from 1, the column in characters) of byte `offset` of text[0..len);
 * an offset past the end counts as the end. */
void ic_text_line_column(const char *text, size_t len, size_t offset, size_t *ret_line,
                         size_t *ret_column);

/* --- Files ---------------------------------------------------------------------------------- */

/* Writes data[0..len) to path atomically (see the contract); err says why on failure. */
int ic_text_write_atomic(const char *path, const char *data, size_t len, char *err,
                         size_t err_size);

/* The same for a C string followed by a newline (a JSON document, say). */
int ic_text_write_atomic_line(const char *path, const char *text, char *err, size_t err_size);

/* Whether `path` names a gzip file (it ends in .gz): every file interopcheck writes under such
 * a name is gzip-compressed, and every reader takes gzip or plain text alike. */
bool ic_path_is_gzip(const char *path);

/* A FILE that reads (gunzipping gzip data, passing anything else through) or writes (gzip)
 * descriptor `fd`, which it owns and closes; NULL when zlib or stdio refused it. */
FILE *ic_gz_fdopen(int fd, bool write);

/* Tells stdio that one thread at a time uses `file`, so that its calls take no lock: once a
 * second thread exists, glibc locks the FILE in every getc, putc and fprintf, and the report
 * stage writes and reads character by character from two threads, each with files of its own
 * (putc was two fifths of the dashboard collector's samples; writing --all's dashboard from
 * what it collected took 0.37 s with the locks and 0.17 s without). Returns `file`, which may
 * be NULL. */
FILE *ic_file_private(FILE *file);

/* Writes what `writer` writes to its FILE, atomically as ic_text_write_atomic (gzip-compressed
 * when `path` ends in .gz), a FILE of one thread (ic_file_private): the writer
 * returns 0, IC_EIO when a write failed (errno says why) or IC_ENOMEM; on failure nothing
 * replaces `path`. */
typedef int (*ic_text_writer_fn)(FILE *file, void *context);

/* For a writer of ic_text_write_atomic_with that writes tens of megabytes: what it wrote so far
 * goes to the disk now, in the background (sync_file_range), so that the fsync that ends the
 * write waits for the last part only. Nothing for a compressed file; errors are the fsync's to
 * report. */
void ic_text_write_early(FILE *file);

int ic_text_write_atomic_with(const char *path, ic_text_writer_fn writer, void *context, char *err,
                              size_t err_size);

/* 64-bit FNV-1a of a NUL-terminated string: for hash tables and names that only have to tell
 * strings apart, never for anything stored as an id. */
uint64_t ic_text_hash(const char *text);

#endif
