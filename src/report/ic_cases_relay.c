#include "ic_cases_relay.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_text.h"

/* Three batches: one being made, one being read, one ready between them, so that neither
 * thread waits while the other is a batch behind. 256 cases of --all took 0.34-0.77 MiB of
 * arena and at most 0.27 MiB of text (781 batches, none spilled over to malloc). */
#define IC_RELAY_BATCHES     3
#define IC_RELAY_BATCH_CASES 256
#define IC_RELAY_ARENA       ((size_t)1 << 20)

#define IC_RELAY_NO_TEXT SIZE_MAX

struct ic_relay_batch {
    struct ic_json_arena arena;
    cJSON *cases[IC_RELAY_BATCH_CASES];
    size_t text_at[IC_RELAY_BATCH_CASES]; /* offset in `text`, or IC_RELAY_NO_TEXT */
    size_t text_len[IC_RELAY_BATCH_CASES];
    struct ic_text_buf text;
    size_t count;
    bool last;  /* the pass ends with this batch (which may hold no case) */
    int status; /* with `last`: the pass's status */
};

struct ic_cases_relay {
    struct ic_cases base;
    struct ic_plan_cases *upstream; /* the thread's until the finish */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    /* Batch n is batches[n % IC_RELAY_BATCHES]. Under `lock`: the batches made (`published`)
     * and given back by the reader (`released`), and whether the reader is done (`stop`). */
    size_t published, released;
    bool stop;
    size_t batch_cases; /* a batch's cases, at most */
    size_t arena_full;  /* a batch is full once its arena holds this much: a case may not fit */
    struct ic_relay_batch batches[IC_RELAY_BATCHES];
    /* The reader's: the batch it reads (NULL before its first), the next case's index in it,
     * and where its pass stands. */
    struct ic_relay_batch *reading;
    size_t at;
    bool started, ended;
};

/* Gives the batch's cases back: each tree is walked only where its blocks may not all be the
 * arena's (it spilled over to malloc, there is no arena, or cJSON allocates without ic_json's
 * hooks, which leaves the arena unused). */
static void ic_relay_batch_clear(struct ic_relay_batch *b)
{
    bool arena_holds_all = b->arena.base && !b->arena.spilled && b->arena.used > 0;
    if (!arena_holds_all) {
        ic_json_arena_enter(&b->arena);
        for (size_t i = 0; i < b->count; i++)
            cJSON_Delete(b->cases[i]);
        ic_json_arena_leave();
    }
    ic_json_arena_reset(&b->arena);
    ic_text_buf_truncate(&b->text, 0);
    b->text.status = 0;
    b->count = 0;
    b->last = false;
    b->status = 0;
}

/* Adds upstream's case (just returned) to `b`, with a copy of its text. IC_ENOMEM when the
 * text could not be copied (the case is added, without it). */
static int ic_relay_batch_add(struct ic_relay_batch *b, struct ic_plan_cases *upstream)
{
    size_t len = 0;
    const char *text = ic_cases_text(&upstream->base, &len);
    size_t i = b->count++;
    b->text_at[i] = IC_RELAY_NO_TEXT;
    if (text) {
        size_t at = b->text.len;
        if (ic_text_buf_add(&b->text, text, len) == 0) {
            b->text_at[i] = at;
            b->text_len[i] = len;
        }
    }
    b->cases[i] = ic_plan_cases_take(upstream); /* after its text: the text is the current's */
    return b->text.status ? IC_ENOMEM : 0;
}

/* Waits for batch `n` to be free (the reader gave back the one made three batches before).
 * False when the reader is done. */
static bool ic_relay_wait_free(struct ic_cases_relay *relay, size_t n)
{
    pthread_mutex_lock(&relay->lock);
    while (!relay->stop && n - relay->released >= IC_RELAY_BATCHES)
        pthread_cond_wait(&relay->changed, &relay->lock);
    bool go = !relay->stop;
    pthread_mutex_unlock(&relay->lock);
    return go;
}

static void *ic_relay_main(void *context)
{
    struct ic_cases_relay *relay = context;
    struct ic_cases *up = &relay->upstream->base;
    bool first = true, more = true;
    for (size_t n = 0; more && ic_relay_wait_free(relay, n); n++) {
        struct ic_relay_batch *b = &relay->batches[n % IC_RELAY_BATCHES];
        int status = 0;
        ic_relay_batch_clear(b);
        ic_json_arena_enter(&b->arena);
        while (b->count < relay->batch_cases && b->arena.used <= relay->arena_full) {
            const cJSON *c = first ? ic_cases_first(up) : ic_cases_next(up);
            first = false;
            if (!c) {
                more = false;
                status = ic_cases_status(up);
                break;
            }
            status = ic_relay_batch_add(b, relay->upstream);
            if (status < 0) {
                more = false;
                break;
            }
        }
        ic_json_arena_leave();
        b->last = !more;
        b->status = status;
        pthread_mutex_lock(&relay->lock);
        relay->published = n + 1;
        pthread_cond_broadcast(&relay->changed);
        pthread_mutex_unlock(&relay->lock);
    }
    return NULL;
}

/* The reader's next case: from the batch it reads, else from the next one made (the batch it
 * read is given back: its last case was returned by the call before). */
static const cJSON *ic_relay_next(struct ic_cases *self)
{
    struct ic_cases_relay *relay = (struct ic_cases_relay *)self;
    while (!relay->ended) {
        struct ic_relay_batch *b = relay->reading;
        if (b && relay->at < b->count)
            return b->cases[relay->at++];
        if (b && b->last) {
            relay->ended = true;
            self->status = b->status;
            break;
        }
        pthread_mutex_lock(&relay->lock);
        if (b) {
            relay->released++;
            pthread_cond_broadcast(&relay->changed);
        }
        while (relay->published <= relay->released)
            pthread_cond_wait(&relay->changed, &relay->lock);
        relay->reading = &relay->batches[relay->released % IC_RELAY_BATCHES];
        pthread_mutex_unlock(&relay->lock);
        relay->at = 0;
    }
    return NULL;
}

static const cJSON *ic_relay_first(struct ic_cases *self)
{
    struct ic_cases_relay *relay = (struct ic_cases_relay *)self;
    if (relay->started) { /* one pass only */
        self->status = IC_EINVAL;
        relay->ended = true;
        return NULL;
    }
    relay->started = true;
    return ic_relay_next(self);
}

static const char *ic_relay_text(struct ic_cases *self, size_t *ret_len)
{
    struct ic_cases_relay *relay = (struct ic_cases_relay *)self;
    const struct ic_relay_batch *b = relay->reading;
    *ret_len = 0;
    if (relay->ended || !b || relay->at == 0 || b->text_at[relay->at - 1] == IC_RELAY_NO_TEXT)
        return NULL;
    *ret_len = b->text_len[relay->at - 1];
    return b->text.data + b->text_at[relay->at - 1];
}

static void ic_relay_free(struct ic_cases_relay *relay)
{
    for (int k = 0; k < IC_RELAY_BATCHES; k++) {
        ic_relay_batch_clear(&relay->batches[k]);
        ic_json_arena_release(&relay->batches[k].arena);
        ic_text_buf_release(&relay->batches[k].text);
    }
    pthread_cond_destroy(&relay->changed);
    pthread_mutex_destroy(&relay->lock);
    free(relay);
}

int ic_cases_relay_start(struct ic_plan_cases *upstream, struct ic_cases_relay **ret)
{
    return ic_cases_relay_start_sized(upstream, IC_RELAY_BATCH_CASES, IC_RELAY_ARENA, ret);
}

int ic_cases_relay_start_sized(struct ic_plan_cases *upstream, size_t batch_cases,
                               size_t arena_bytes, struct ic_cases_relay **ret)
{
    *ret = NULL;
    if (batch_cases < 1 || batch_cases > IC_RELAY_BATCH_CASES)
        return IC_EINVAL;
    struct ic_cases_relay *relay = calloc(1, sizeof(*relay));
    if (!relay)
        return IC_ENOMEM;
    pthread_mutex_init(&relay->lock, NULL);
    pthread_cond_init(&relay->changed, NULL);
    int rc = 0;
    for (int k = 0; k < IC_RELAY_BATCHES; k++) {
        ic_text_buf_init(&relay->batches[k].text);
        if (ic_json_arena_init(&relay->batches[k].arena, arena_bytes) < 0)
            rc = IC_ENOMEM;
    }
    relay->upstream = upstream;
    relay->batch_cases = batch_cases;
    relay->arena_full = arena_bytes / 4 * 3;
    relay->base.first = ic_relay_first;
    relay->base.next = ic_relay_next;
    relay->base.text = ic_relay_text;
    relay->base.count = upstream->base.count;
    if (rc == 0 && pthread_create(&relay->thread, NULL, ic_relay_main, relay) != 0)
        rc = IC_EIO;
    if (rc < 0) {
        ic_relay_free(relay);
        return rc;
    }
    *ret = relay;
    return 0;
}

struct ic_cases *ic_cases_relay_cases(struct ic_cases_relay *relay)
{
    return &relay->base;
}

int ic_cases_relay_finish(struct ic_cases_relay *relay)
{
    pthread_mutex_lock(&relay->lock);
    relay->stop = true;
    pthread_cond_broadcast(&relay->changed);
    pthread_mutex_unlock(&relay->lock);
    pthread_join(relay->thread, NULL);
    int status = relay->base.status;
    ic_relay_free(relay);
    return status;
}
