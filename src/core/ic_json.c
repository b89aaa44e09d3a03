#include "ic_json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

/* Replaces the cJSON-owned string in *slot by its repaired and capped form when it differs.
 * Returns 1 when it was replaced, 0 when it stands, IC_ENOMEM. */
static int ic_json_cap_one(char **slot, size_t cap)
{
    size_t len = strlen(*slot);
    if (len <= cap && ic_utf8_valid(*slot, len))
        return 0;
    struct ic_text_buf capped;
    ic_text_buf_init(&capped);
    if (ic_text_buf_add_escaped(&capped, *slot, len, IC_ESCAPE_PLAIN, cap) < 0) {
        ic_text_buf_release(&capped);
        return IC_ENOMEM;
    }
    /* The tree frees its strings with cJSON's allocator, so the copy comes from it too. */
    char *copy = cJSON_malloc(capped.len + 1);
    if (!copy) {
        ic_text_buf_release(&capped);
        return IC_ENOMEM;
    }
    memcpy(copy, ic_text_buf_str(&capped), capped.len + 1);
    ic_text_buf_release(&capped);
    cJSON_free(*slot);
    *slot = copy;
    return 1;
}

static int ic_json_cap_item(cJSON *item, size_t cap, size_t value_cap, const char *long_key,
                            size_t long_cap)
{
    int changed = 0, rc;
    /* A name cJSON does not own (cJSON_StringIsConst) is the program's, never foreign text. */
    if (item->string && !(item->type & cJSON_StringIsConst)) {
        if ((rc = ic_json_cap_one(&item->string, cap)) < 0)
            return rc;
        changed += rc;
    }
    if (cJSON_IsString(item) && item->valuestring) {
        if ((rc = ic_json_cap_one(&item->valuestring, value_cap)) < 0)
            return rc;
        changed += rc;
    }
    /* cJSON refuses to parse more than CJSON_NESTING_LIMIT levels, so the recursion is
     * bounded for any tree that came from text. */
    for (cJSON *child = item->child; child; child = child->next) {
        bool is_long = long_key && child->string && strcmp(child->string, long_key) == 0;
        if ((rc = ic_json_cap_item(child, cap, is_long ? long_cap : cap, long_key, long_cap)) < 0)
            return rc;
        changed += rc;
    }
    return changed;
}

int ic_json_cap_strings(cJSON *tree, size_t cap, const char *long_key, size_t long_cap)
{
    if (!tree)
        return 0;
    return ic_json_cap_item(tree, cap, cap, long_key, long_cap);
}

/* The largest text ic_json_print makes: a tree whose text does not fit is refused rather than
 * grown into, as a tree cJSON cannot print at all would be. */
#define IC_JSON_PRINT_MAX ((size_t)256 << 20)

/* The printing buffer of each thread (ic_json_print), and its size. */
static _Thread_local char *ic_print_buffer;
static _Thread_local size_t ic_print_size;

/* Gives a thread's buffer (and its arena, below) back when the thread ends (the main
 * thread's at exit). */
static pthread_key_t ic_print_key;
static pthread_once_t ic_print_once = PTHREAD_ONCE_INIT;

static void ic_thread_block_release(void *buffer)
{
    free(buffer);
}

static void ic_print_key_make(void)
{
    (void)pthread_key_create(&ic_print_key, ic_thread_block_release);
}

const char *ic_json_print(const cJSON *item, bool formatted, size_t *ret_len)
{
    /* cJSON asks for a few bytes more than it writes (its header says five). */
    for (size_t size = ic_print_size ? ic_print_size : 4096; size <= IC_JSON_PRINT_MAX;
         size *= 2) {
        if (size > ic_print_size) {
            char *grown = realloc(ic_print_buffer, size);
            if (!grown)
                return NULL;
            pthread_once(&ic_print_once, ic_print_key_make);
            ic_print_buffer = grown;
            ic_print_size = size;
            (void)pthread_setspecific(ic_print_key, grown);
        }
        if (cJSON_PrintPreallocated((cJSON *)item, ic_print_buffer, (int)(size - 8), formatted)) {
            if (ret_len)
                *ret_len = strlen(ic_print_buffer);
            return ic_print_buffer;
        }
    }
    return NULL;
}

/* The calling thread's arena (ic_json_arena_begin): IC_JSON_ARENA_SIZE bytes, made at its first
 * use and given back when the thread ends (the main thread's at exit). A message, its result
 * and the stream line printed from it take a few tens of kilobytes. */
#define IC_JSON_ARENA_SIZE ((size_t)1 << 20)

static _Thread_local char *ic_arena_base;
static _Thread_local size_t ic_arena_used;
static _Thread_local int ic_arena_depth;
static pthread_key_t ic_arena_key;
static pthread_once_t ic_arena_once = PTHREAD_ONCE_INIT;

static void ic_arena_key_make(void)
{
    (void)pthread_key_create(&ic_arena_key, ic_thread_block_release);
}

/* The arena the calling thread entered (ic_json_arena_enter), or NULL. */
static _Thread_local struct ic_json_arena *ic_arena_entered;

static bool ic_arena_owns(const void *block)
{
    const char *at = block;
    const struct ic_json_arena *entered = ic_arena_entered;
    if (entered && entered->base && at >= entered->base && at < entered->base + entered->size)
        return true;
    return ic_arena_base && at >= ic_arena_base && at < ic_arena_base + IC_JSON_ARENA_SIZE;
}

static void *ic_json_malloc(size_t size)
{
    size_t rounded = (size + 15) & ~(size_t)15;
    struct ic_json_arena *entered = ic_arena_entered;
    if (entered) {
        if (!entered->base || rounded > entered->size - entered->used) {
            entered->spilled = true;
            return malloc(size);
        }
        void *block = entered->base + entered->used;
        entered->used += rounded;
        return block;
    }
    if (ic_arena_depth > 0 && ic_arena_base && rounded <= IC_JSON_ARENA_SIZE - ic_arena_used) {
        void *block = ic_arena_base + ic_arena_used;
        ic_arena_used += rounded;
        return block;
    }
    return malloc(size);
}

static void ic_json_free(void *block)
{
    if (!ic_arena_owns(block))
        free(block);
}

void ic_json_hooks_install(void)
{
    cJSON_Hooks hooks = {ic_json_malloc, ic_json_free};
    cJSON_InitHooks(&hooks);
}

void ic_json_arena_begin(void)
{
#ifdef __SANITIZE_ADDRESS__
    /* Under AddressSanitizer every block stays malloc's, so that a node used past its span
     * is caught where an arena would hide it. */
    return;
#endif
    if (!ic_arena_base) {
        /* 16-byte aligned, as malloc's blocks are. Out of memory: no arena, plain malloc. */
        if (posix_memalign((void **)&ic_arena_base, 16, IC_JSON_ARENA_SIZE) != 0)
            ic_arena_base = NULL;
        pthread_once(&ic_arena_once, ic_arena_key_make);
        if (ic_arena_base)
            (void)pthread_setspecific(ic_arena_key, ic_arena_base);
    }
    ic_arena_depth++;
}

void ic_json_arena_end(void)
{
    if (ic_arena_depth > 0 && --ic_arena_depth == 0)
        ic_arena_used = 0;
}

int ic_json_arena_init(struct ic_json_arena *arena, size_t size)
{
    memset(arena, 0, sizeof(*arena));
    arena->size = size;
#ifdef __SANITIZE_ADDRESS__
    /* As in ic_json_arena_begin: every block malloc's, so that a use past a reset is caught. */
    return 0;
#endif
    if (posix_memalign((void **)&arena->base, 16, size) != 0) {
        arena->base = NULL;
        return IC_ENOMEM;
    }
    return 0;
}

void ic_json_arena_release(struct ic_json_arena *arena)
{
    free(arena->base);
    memset(arena, 0, sizeof(*arena));
}

void ic_json_arena_enter(struct ic_json_arena *arena)
{
    ic_arena_entered = arena;
}

void ic_json_arena_leave(void)
{
    ic_arena_entered = NULL;
}
