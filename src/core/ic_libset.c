#include "ic_libset.h"

#include <stdlib.h>
#include <string.h>

#include "ic_error.h"

bool ic_libset_has(const struct ic_libset *set, int index)
{
    if (set->all)
        return index >= 0;
    size_t word = (size_t)index / 64;
    return index >= 0 && word < set->nwords && (set->words[word] >> (index % 64)) & 1u;
}

int ic_libset_add(struct ic_libset *set, int index)
{
    if (index < 0)
        return IC_EINVAL;
    if (set->all)
        return 0;
    size_t word = (size_t)index / 64;
    if (word >= set->nwords) {
        size_t nwords = word + 1 > 2 * set->nwords ? word + 1 : 2 * set->nwords;
        uint64_t *words = realloc(set->words, nwords * sizeof(*words));
        if (!words)
            return IC_ENOMEM;
        memset(words + set->nwords, 0, (nwords - set->nwords) * sizeof(*words));
        set->words = words;
        set->nwords = nwords;
    }
    set->words[word] |= 1ull << (index % 64);
    return 0;
}

void ic_libset_fill(struct ic_libset *set)
{
    set->all = true;
}

void ic_libset_clear(struct ic_libset *set)
{
    set->all = false;
    if (set->words)
        memset(set->words, 0, set->nwords * sizeof(*set->words));
}

bool ic_libset_empty(const struct ic_libset *set)
{
    for (size_t i = 0; !set->all && i < set->nwords; i++) {
        if (set->words[i])
            return false;
    }
    return !set->all;
}

bool ic_libset_intersects(const struct ic_libset *a, const struct ic_libset *b)
{
    if (a->all || b->all)
        return !ic_libset_empty(a->all ? b : a);
    size_t n = a->nwords < b->nwords ? a->nwords : b->nwords;
    for (size_t i = 0; i < n; i++) {
        if (a->words[i] & b->words[i])
            return true;
    }
    return false;
}

int ic_libset_merge(struct ic_libset *dst, const struct ic_libset *src)
{
    if (src->all) {
        dst->all = true;
        return 0;
    }
    for (size_t w = src->nwords; w-- > 0;) {
        for (int bit = 63; bit >= 0; bit--) {
            if ((src->words[w] >> bit) & 1u) {
                int rc = ic_libset_add(dst, (int)(w * 64) + bit);
                if (rc < 0)
                    return rc;
            }
        }
    }
    return 0;
}

void ic_libset_release(struct ic_libset *set)
{
    free(set->words);
    memset(set, 0, sizeof(*set));
}
