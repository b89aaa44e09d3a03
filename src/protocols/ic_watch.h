/*
 * ic_watch: the process-wide table behind the instrumented callbacks of the lifetime checks:
 * DLPack's deleters (ic_dlpack.c) and Arrow's release callbacks (ic_arrow.c). A protocol
 * module replaces a producer's callback with a counting one and keeps the original in an entry
 * of its table; the entry's id is what the case's record lists, and what a counting callback
 * may carry to find its entry again.
 *
 * Contract
 * - A table is a static `struct ic_watch_table` made with IC_WATCH_TABLE_INIT(entry type). Its
 *   entries are structs of that type whose first member is a `struct ic_watch_head`; the
 *   module adds what it needs after it. Entries are zeroed when added and when retired; ids
 *   are positive and never 0 (0 marks a free slot).
 * - Callbacks may run on any thread, also after the case that made the entry is over, so
 *   every access holds the table's lock: ic_watch_lock / ic_watch_unlock around the functions
 *   marked "locked", which the module calls; the others take the lock themselves. Nothing
 *   here touches Python, and the lock is never held while a producer's callback runs (that
 *   callback may take the GIL, whose holder may be waiting for this lock).
 * - Pointers to entries are valid only while the lock is held: the table grows by realloc.
 * - The table grows and never shrinks. Lifetime of an entry: added by the module when it
 *   instruments a callback; retired by ic_watch_done once the case let go of it and the
 *   callback was called, or by the module's counting callback when it is called after the
 *   case let go. A call for an id the table no longer knows is counted by the module
 *   (ic_watch_note_unmatched) and never forwarded.
 */
#ifndef IC_WATCH_H
#define IC_WATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The members every entry starts with. */
struct ic_watch_head {
    int id;        /* 0: a free slot */
    bool released; /* the case is done with it */
    int calls;     /* calls of the counting callback */
};

struct ic_watch_table {
    pthread_mutex_t lock;
    size_t entry_size;
    unsigned char *entries; /* capacity entries of entry_size bytes */
    size_t capacity;
    int last_id;
    int unmatched;
};

#define IC_WATCH_TABLE_INIT(entry_type) {PTHREAD_MUTEX_INITIALIZER, sizeof(entry_type), NULL, 0, 0, 0}

void ic_watch_lock(struct ic_watch_table *table);
void ic_watch_unlock(struct ic_watch_table *table);

/* Locked. The entry with `id`, or NULL. */
void *ic_watch_by_id(struct ic_watch_table *table, int id);

/* Locked. The first entry in use for which match(entry, key) is true, or NULL. */
void *ic_watch_find(struct ic_watch_table *table, bool (*match)(const void *entry, const void *key),
                    const void *key);

/* Locked. A new zeroed entry with a fresh id, or NULL when memory ran out. */
void *ic_watch_add(struct ic_watch_table *table);

/* Locked. Frees the entry's slot. */
void ic_watch_retire(struct ic_watch_table *table, void *entry);

/* Locked. Counts a call for an id the table does not know. */
void ic_watch_note_unmatched(struct ic_watch_table *table);

/* A copy of entry `id` (entry_size bytes into `out`), taken under the lock: IC_ENOTFOUND when
 * the table no longer has it. */
int ic_watch_copy(struct ic_watch_table *table, int id, void *out);

/* The case is done with entry `id`: retired now when its callback was called, otherwise when
 * the call comes. */
void ic_watch_done(struct ic_watch_table *table, int id);

/* Calls for unknown ids since the process started. */
int ic_watch_unmatched(struct ic_watch_table *table);

#endif
