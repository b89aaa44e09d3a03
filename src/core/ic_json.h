/*
 * ic_json: typed reads of a parsed report (a cJSON tree), shared by the report readers
 * (dashboard, JUnit, Markdown, diff, merge), and the capping of trees that hold library text.
 *
 * Contract
 * - Every getter takes a possibly NULL object and returns NULL (or the fallback) when the key
 *   is missing or holds another type; nothing is allocated and the tree keeps ownership of
 *   what is returned.
 * - ic_json_print prints into a buffer each thread keeps for itself (freed at its exit).
 * - ic_json_cap_strings makes every string of a tree, member names included, valid UTF-8 of at
 *   most `cap` bytes (ic_text's repair and cut marker), in place. It is applied where a tree of
 *   foreign text enters (a probe's load() info, a report read from a file), so that nothing
 *   downstream holds megabytes of one library message. Strings that are already valid and
 *   short enough are left as they are, so a tree of well-behaved text is not copied.
 */
#ifndef IC_JSON_H
#define IC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Caps every string of `tree` at `cap` bytes, and the values of members named `long_key` (may
 * be NULL) at `long_cap` instead. Returns the number of strings changed, or IC_ENOMEM: the tree
 * is then a valid tree with some strings not yet capped. */
int ic_json_cap_strings(cJSON *tree, size_t cap, const char *long_key, size_t long_cap);

/* `item` printed (cJSON's formatted or one-line text) into a buffer of the calling thread's,
 * reused from call to call, so that printing a case a line allocates nothing: glibc
 * consolidated its free lists each time cJSON grew its own buffer past a kilobyte, a quarter of
 * the report stage's time. The text stays valid until the thread's next call; *ret_len (may be
 * NULL) is its length. NULL when out of memory. */
const char *ic_json_print(const cJSON *item, bool formatted, size_t *ret_len);

/* cJSON's allocations through a bump arena of the calling thread's, for the supervisor's
 * hottest loop: each message a worker sends is parsed, checked, turned into a result and that
 * result printed into the stream, some hundred small blocks allocated and freed a case, which
 * glibc's malloc and free took a quarter of the supervisor's time over.
 * - ic_json_hooks_install, once, before anything else uses cJSON (main): cJSON then allocates
 *   through ic_json's functions, which pass to malloc and free outside an arena.
 * - Between ic_json_arena_begin and the matching ic_json_arena_end (they nest), the calling
 *   thread's cJSON blocks come from its arena while it has room (malloc after that), freeing
 *   one of them does nothing, and the end gives them all back at once: they stay as they are
 *   until the thread's next span begins, which reuses them. So a tree made in a span may be
 *   read, changed with blocks from malloc, and deleted after it, but not once the thread has
 *   begun another span; and no node of another thread's arena may be freed anywhere. */
void ic_json_hooks_install(void);
void ic_json_arena_begin(void);
void ic_json_arena_end(void);

/* A bump arena of the caller's, for trees made in one thread and read in another (the report
 * stage's read-ahead, ic_cases_relay.h). Between ic_json_arena_enter and ic_json_arena_leave
 * the calling thread's cJSON blocks come from `arena` while it has room (malloc after that,
 * spans or not), and freeing one of them does nothing. A tree made there is read anywhere, but
 * deleted only by a thread that has entered the same arena, since its blocks past the arena's
 * room are malloc's; ic_json_arena_reset then gives every block back at once. The caller owns
 * the arena; a NULL base (out of memory) leaves every block to malloc. Enters do not nest. */
struct ic_json_arena {
    char *base;
    size_t size, used;
    bool spilled; /* a block came from malloc since the last reset: a tree needs deleting */
};
int ic_json_arena_init(struct ic_json_arena *arena, size_t size); /* 0 or IC_ENOMEM */
void ic_json_arena_release(struct ic_json_arena *arena);
void ic_json_arena_enter(struct ic_json_arena *arena);
void ic_json_arena_leave(void);
static inline void ic_json_arena_reset(struct ic_json_arena *arena)
{
    arena->used = 0;
    arena->spilled = false;
}

/* A count in a report someone may have written or edited: the item's value when it is a whole
 * number in [0, 2^53), else 0. Converting a double outside the target type's range is
 * undefined behaviour, so no report number is cast without passing through here (fuzz_report
 * found four such casts). */
static inline size_t ic_json_count(const cJSON *item)
{
    if (!cJSON_IsNumber(item))
        return 0;
    double value = item->valuedouble;
    if (!(value >= 0 && value < 0x1p53)) /* also false for NaN */
        return 0;
    size_t count = (size_t)value;
    return (double)count == value ? count : 0;
}

/* The member `key` of `object`, as cJSON_GetObjectItemCaseSensitive finds it (the first of that
 * name; NULL for a NULL object, a missing key, or past a member without a name), comparing the
 * first byte before calling strcmp: the report stage looks up some twenty members of each of
 * 196 000 cases twice, and cJSON's strcmp on every member it passes was a sixth of that
 * stage's time. */
static inline cJSON *ic_json_get(const cJSON *object, const char *key)
{
    cJSON *item = object ? object->child : NULL;
    for (; item && item->string; item = item->next) {
        if (item->string[0] == key[0] && strcmp(item->string, key) == 0)
            return item;
    }
    return NULL;
}

/* The string at `key`, or NULL. */
static inline const char *ic_json_string(const cJSON *object, const char *key)
{
    const cJSON *item = ic_json_get(object, key);
    return cJSON_IsString(item) && item->valuestring ? item->valuestring : NULL;
}

/* The string at `key`, or `fallback`. */
static inline const char *ic_json_string_or(const cJSON *object, const char *key,
                                            const char *fallback)
{
    const char *value = ic_json_string(object, key);
    return value ? value : fallback;
}

/* The number at `key`, or `fallback`. */
static inline double ic_json_number_or(const cJSON *object, const char *key, double fallback)
{
    const cJSON *item = ic_json_get(object, key);
    return cJSON_IsNumber(item) ? item->valuedouble : fallback;
}

#endif
