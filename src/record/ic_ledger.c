#include "ic_ledger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ic_error.h"
#include "ic_protocol.h"
#include "ic_text.h"

/* The ledger's folder (see the contract), "" for none. */
static void ic_ledger_dir(char *out, size_t size)
{
    const char *ledger = getenv("INTEROPCHECK_LEDGER_DIR");
    const char *cache = getenv("INTEROPCHECK_CACHE_DIR");
    snprintf(out, size, "%s", ledger ? ledger : cache ? cache : "");
}

/* Copies a tab-separated field into `out`; false when it is empty or does not fit. */
static bool ic_ledger_field(char **cursor, char *out, size_t size)
{
    char *field = strsep(cursor, "\t");
    if (!field || !field[0] || strlen(field) >= size)
        return false;
    memcpy(out, field, strlen(field) + 1);
    return true;
}

static bool ic_ledger_parse(char *line, struct ic_ledger_entry *entry)
{
    line[strcspn(line, "\r\n")] = '\0';
    char protocol[64];
    char *cursor = line;
    return ic_ledger_field(&cursor, protocol, sizeof(protocol)) &&
           ic_protocol_from_id(protocol, &entry->protocol) == 0 &&
           ic_ledger_field(&cursor, entry->producer, sizeof(entry->producer)) &&
           ic_name_is_valid(entry->producer) &&
           ic_ledger_field(&cursor, entry->producer_version, sizeof(entry->producer_version)) &&
           ic_ledger_field(&cursor, entry->consumer, sizeof(entry->consumer)) &&
           ic_name_is_valid(entry->consumer) &&
           ic_ledger_field(&cursor, entry->consumer_version, sizeof(entry->consumer_version)) &&
           cursor == NULL;
}

int ic_ledger_open(struct ic_ledger *ledger, const char *python)
{
    memset(ledger, 0, sizeof(*ledger));
    char dir[PATH_MAX];
    ic_ledger_dir(dir, sizeof(dir));
    if (!dir[0])
        return 0;
    snprintf(ledger->path, sizeof(ledger->path), "%s/crashed-pairs-%016llx.tsv", dir,
             (unsigned long long)ic_text_hash(python));
    FILE *file = fopen(ledger->path, "re");
    if (!file)
        return 0;
    char line[512];
    int rc = 0;
    struct ic_ledger_entry entry;
    while (rc == 0 && fgets(line, sizeof(line), file)) {
        if (ic_ledger_parse(line, &entry))
            rc = ic_ledger_add(ledger, &entry);
    }
    fclose(file);
    return rc;
}

static bool ic_ledger_same(const struct ic_ledger_entry *a, const struct ic_ledger_entry *b)
{
    return a->protocol == b->protocol && strcmp(a->producer, b->producer) == 0 &&
           strcmp(a->consumer, b->consumer) == 0 &&
           strcmp(a->producer_version, b->producer_version) == 0 &&
           strcmp(a->consumer_version, b->consumer_version) == 0;
}

int ic_ledger_add(struct ic_ledger *ledger, const struct ic_ledger_entry *entry)
{
    for (size_t i = 0; i < ledger->count; i++) {
        if (ic_ledger_same(&ledger->entries[i], entry))
            return 0;
    }
    if (ledger->count == ledger->capacity) {
        size_t grown = ledger->capacity ? 2 * ledger->capacity : 16;
        struct ic_ledger_entry *more = realloc(ledger->entries, grown * sizeof(*more));
        if (!more)
            return IC_ENOMEM;
        ledger->entries = more;
        ledger->capacity = grown;
    }
    ledger->entries[ledger->count++] = *entry;
    return 0;
}

static int ic_ledger_write(FILE *file, void *context)
{
    const struct ic_ledger *ledger = context;
    for (size_t i = 0; i < ledger->count; i++) {
        const struct ic_ledger_entry *e = &ledger->entries[i];
        if (fprintf(file, "%s\t%s\t%s\t%s\t%s\n", ic_protocol_id(e->protocol), e->producer,
                    e->producer_version, e->consumer, e->consumer_version) < 0)
            return IC_EIO;
    }
    return 0;
}

int ic_ledger_save(const struct ic_ledger *ledger, char *err, size_t err_size)
{
    if (!ledger->path[0])
        return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", ledger->path);
    /* The folder and its parent (~/.cache may not exist yet on a new machine). */
    for (char *slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            snprintf(err, err_size, "cannot create %s: %s", dir, strerror(errno));
            return IC_EIO;
        }
        *slash = '/';
    }
    return ic_text_write_atomic_with(ledger->path, ic_ledger_write, (void *)ledger, err, err_size);
}

void ic_ledger_release(struct ic_ledger *ledger)
{
    free(ledger->entries);
    memset(ledger, 0, sizeof(*ledger));
}
