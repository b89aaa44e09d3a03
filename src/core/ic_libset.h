/*
 * ic_libset: a set of libraries by catalog index, as large as the catalog is. It replaces the
 * 64-bit masks that capped a run at 64 probes: a user can install as many as they like.
 *
 * Contract
 * - A zeroed struct is the empty set. ic_libset_fill makes the set of every index ("no
 *   filter"); adding to a full set changes nothing.
 * - The set owns its words (ic_libset_release); ic_libset_clear empties it and keeps them.
 * - ic_libset_add is the only call that allocates: IC_ENOMEM leaves the set as it was.
 */
#ifndef IC_LIBSET_H
#define IC_LIBSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ic_libset {
    bool all;
    uint64_t *words;
    size_t nwords;
};

bool ic_libset_has(const struct ic_libset *set, int index);
int ic_libset_add(struct ic_libset *set, int index);
void ic_libset_fill(struct ic_libset *set);
void ic_libset_clear(struct ic_libset *set);
bool ic_libset_empty(const struct ic_libset *set);
/* True when some index is in both. */
bool ic_libset_intersects(const struct ic_libset *a, const struct ic_libset *b);
/* Adds every index of `src` to `dst`. IC_ENOMEM. */
int ic_libset_merge(struct ic_libset *dst, const struct ic_libset *src);
void ic_libset_release(struct ic_libset *set);

#endif
