#include "ic_strtab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

void ic_strtab_release(struct ic_strtab *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->items[i]);
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* Where a string goes in the table: a hash taken eight bytes at a time, finished as MurmurHash3
 * finishes one so that the low bits the slot is taken from depend on every byte. Only slots
 * depend on it (the table's order is the order strings were added), and the dashboard hashes
 * every diagnostic and note of a run here: FNV-1a's byte at a time was a tenth of its pass. */
static size_t ic_strtab_hash(const char *s)
{
    size_t n = strlen(s);
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, word;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&word, s, 8);
        h = (h ^ word) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    word = 0;
    memcpy(&word, s, n);
    h ^= word;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h;
}

static int ic_strtab_grow(struct ic_strtab *t)
{
    size_t nslots = t->nslots ? t->nslots * 2 : 64;
    size_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return IC_ENOMEM;
    for (size_t i = 0; i < t->count; i++) {
        size_t at = ic_strtab_hash(t->items[i]) & (nslots - 1);
        while (slots[at])
            at = (at + 1) & (nslots - 1);
        slots[at] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

/* The index of `s` in the table, added when new. 0 when memory runs out (status says so). */
size_t ic_strtab_intern(struct ic_strtab *t, const char *s)
{
    if (t->status)
        return 0;
    if ((t->count + 1) * 2 > t->nslots && ic_strtab_grow(t) < 0)
        goto nomem;
    size_t at = ic_strtab_hash(s) & (t->nslots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->nslots - 1)) {
        if (strcmp(t->items[t->slots[at] - 1], s) == 0)
            return t->slots[at] - 1;
    }
    char **items = ic_grow(t->items, &t->capacity, t->count, sizeof(*items), 32);
    if (!items)
        goto nomem;
    t->items = items;
    char *copy = strdup(s);
    if (!copy)
        goto nomem;
    t->items[t->count] = copy;
    t->slots[at] = ++t->count;
    return t->count - 1;
nomem:
    t->status = IC_ENOMEM;
    return 0;
}
