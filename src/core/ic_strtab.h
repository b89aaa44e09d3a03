/*
 * ic_strtab: a table of distinct strings, each with the index it was first added at.
 *
 * Contract
 * - ic_strtab_intern returns the index of a string, adding a copy when it is new, so indices
 *   follow first-seen order. The table owns its copies (ic_strtab_release).
 * - Failures are sticky: when memory runs out, intern returns 0 and `status` is IC_ENOMEM from
 *   then on, so a writer interns freely and checks once at the end.
 * - Zeroed, it is an empty table.
 */
#ifndef IC_STRTAB_H
#define IC_STRTAB_H

#include <stddef.h>

/* A table of distinct strings in first-seen order, each with its index. Failures are sticky
 * (status), so the writer can intern freely and check once at the end. */
struct ic_strtab {
    char **items;
    size_t count, capacity;
    size_t *slots; /* open addressing: index + 1, 0 for an empty slot */
    size_t nslots;
    int status;
};

/* The index of `s` in the table, added when new. 0 when memory runs out (status says so). */
size_t ic_strtab_intern(struct ic_strtab *t, const char *s);

void ic_strtab_release(struct ic_strtab *t);

#endif
