#include "ic_watch.h"

#include <stdint.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

void ic_watch_lock(struct ic_watch_table *table)
{
    pthread_mutex_lock(&table->lock);
}

void ic_watch_unlock(struct ic_watch_table *table)
{
    pthread_mutex_unlock(&table->lock);
}

static struct ic_watch_head *ic_watch_slot(struct ic_watch_table *table, size_t i)
{
    return (struct ic_watch_head *)(table->entries + i * table->entry_size);
}

void *ic_watch_by_id(struct ic_watch_table *table, int id)
{
    for (size_t i = 0; id > 0 && i < table->capacity; i++) {
        if (ic_watch_slot(table, i)->id == id)
            return ic_watch_slot(table, i);
    }
    return NULL;
}

void *ic_watch_find(struct ic_watch_table *table, bool (*match)(const void *entry, const void *key),
                    const void *key)
{
    for (size_t i = 0; i < table->capacity; i++) {
        struct ic_watch_head *head = ic_watch_slot(table, i);
        if (head->id != 0 && match(head, key))
            return head;
    }
    return NULL;
}

void *ic_watch_add(struct ic_watch_table *table)
{
    struct ic_watch_head *slot = NULL;
    for (size_t i = 0; i < table->capacity && !slot; i++) {
        if (ic_watch_slot(table, i)->id == 0)
            slot = ic_watch_slot(table, i);
    }
    if (!slot) {
        size_t used = table->capacity;
        unsigned char *grown =
            ic_grow(table->entries, &table->capacity, used, table->entry_size, 64);
        if (!grown)
            return NULL;
        table->entries = grown;
        slot = ic_watch_slot(table, used);
    }
    memset(slot, 0, table->entry_size);
    if (table->last_id == INT32_MAX)
        table->last_id = 0;
    slot->id = ++table->last_id;
    return slot;
}

void ic_watch_retire(struct ic_watch_table *table, void *entry)
{
    memset(entry, 0, table->entry_size);
}

void ic_watch_note_unmatched(struct ic_watch_table *table)
{
    table->unmatched++;
}

int ic_watch_copy(struct ic_watch_table *table, int id, void *out)
{
    ic_watch_lock(table);
    const void *entry = ic_watch_by_id(table, id);
    if (entry)
        memcpy(out, entry, table->entry_size);
    ic_watch_unlock(table);
    return entry ? 0 : IC_ENOTFOUND;
}

void ic_watch_done(struct ic_watch_table *table, int id)
{
    ic_watch_lock(table);
    struct ic_watch_head *head = ic_watch_by_id(table, id);
    if (head) {
        head->released = true;
        if (head->calls > 0)
            ic_watch_retire(table, head);
    }
    ic_watch_unlock(table);
}

int ic_watch_unmatched(struct ic_watch_table *table)
{
    ic_watch_lock(table);
    int calls = table->unmatched;
    ic_watch_unlock(table);
    return calls;
}
