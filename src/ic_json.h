/*
 * ic_json: typed reads of a parsed report (a cJSON tree), shared by the report readers
 * (dashboard, JUnit, Markdown, diff, merge).
 *
 * Contract
 * - Every getter takes a possibly NULL object and returns NULL (or the fallback) when the key
 *   is missing or holds another type; nothing is allocated and the tree keeps ownership of
 *   what is returned.
 */
#ifndef IC_JSON_H
#define IC_JSON_H

#include <cjson/cJSON.h>

/* The string at `key`, or NULL. */
static inline const char *ic_json_string(const cJSON *object, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    return cJSON_IsString(item) && item->valuestring ? item->valuestring : NULL;
}

/* The string at `key`, or `fallback`. */
static inline const char *ic_json_string_or(const cJSON *object, const char *key,
                                            const char *fallback)
{
    const char *value = ic_json_string(object, key);
    return value ? value : fallback;
}

#endif
