#include "ic_catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_json.h"
#include "ic_text.h"

int ic_catalog_find(const struct ic_catalog *catalog, const char *name)
{
    for (int i = 0; i < catalog->count; i++) {
        if (strcmp(catalog->libs[i].name, name) == 0)
            return i;
    }
    return -1;
}

static int ic_compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Room for one more library (and its place in the import order). */
static int ic_catalog_grow(struct ic_catalog *catalog)
{
    size_t count = (size_t)catalog->count;
    struct ic_library *libs =
        ic_grow(catalog->libs, &catalog->capacity, count, sizeof(*libs), 32);
    if (!libs)
        return IC_ENOMEM;
    catalog->libs = libs;
    int *order = ic_grow(catalog->order, &catalog->order_capacity, count, sizeof(*order), 32);
    if (!order)
        return IC_ENOMEM;
    catalog->order = order;
    return 0;
}

static int ic_scan_dir(struct ic_catalog *catalog, const char *dir, char *err, size_t err_size)
{
    DIR *handle = opendir(dir);
    if (!handle) {
        snprintf(err, err_size, "cannot read the probe directory '%s': %s", dir, strerror(errno));
        return IC_EIO;
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    struct dirent *entry;
    int rc = 0;
    while ((entry = readdir(handle))) {
        size_t len = strlen(entry->d_name);
        if (len < 4 || strcmp(entry->d_name + len - 3, ".py") != 0 || entry->d_name[0] == '_' ||
            entry->d_name[0] == '.')
            continue;
        char **more = ic_grow(names, &capacity, count, sizeof(*names), 64);
        if (!more) {
            rc = IC_ENOMEM;
            break;
        }
        names = more;
        names[count] = strdup(entry->d_name);
        if (!names[count]) {
            rc = IC_ENOMEM;
            break;
        }
        count++;
    }
    closedir(handle);
    /* Sorted, so the order of the matrix does not depend on the file system. */
    if (count)
        qsort(names, count, sizeof(names[0]), ic_compare_names);

    if (rc == IC_ENOMEM)
        snprintf(err, err_size, "out of memory while reading the probe directory '%s'", dir);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        char stem[IC_NAME_MAX + 8];
        size_t len = strlen(names[i]) - 3;
        snprintf(stem, sizeof(stem), "%.*s", (int)(len < sizeof(stem) ? len : sizeof(stem) - 1),
                 names[i]);
        int index = ic_catalog_find(catalog, stem);
        if (index < 0) {
            rc = ic_catalog_grow(catalog);
            if (rc < 0) {
                snprintf(err, err_size, "out of memory while reading the probe directory '%s'",
                         dir);
                break;
            }
            index = catalog->count++;
        }
        struct ic_library *lib = &catalog->libs[index];
        cJSON_Delete(lib->info);
        ic_libset_release(&lib->load_before);
        memset(lib, 0, sizeof(*lib));
        snprintf(lib->name, sizeof(lib->name), "%.*s", IC_NAME_MAX - 1, stem);
        snprintf(lib->path, sizeof(lib->path), "%s/%s", dir, names[i]);
        if (!ic_name_is_valid(stem) || len >= IC_NAME_MAX) {
            lib->state = IC_LIBRARY_INVALID;
            /* A file name is bytes: repaired, so the report stays UTF-8. */
            int n = snprintf(lib->error, sizeof(lib->error),
                             "'%s' is not a usable probe name: rename the file to lower-case "
                             "letters, digits and '_'",
                             names[i]);
            ic_text_fix_formatted(lib->error, sizeof(lib->error), n);
        }
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return rc;
}

int ic_catalog_scan(struct ic_catalog *catalog, const char *const *dirs, int ndirs, char *err,
                    size_t err_size)
{
    memset(catalog, 0, sizeof(*catalog));
    if (ndirs < 1) {
        snprintf(err, err_size, "no probe directory");
        return IC_EINVAL;
    }
    snprintf(catalog->kit_path, sizeof(catalog->kit_path), "%s/_probekit.py", dirs[0]);
    if (access(catalog->kit_path, R_OK) != 0) {
        snprintf(err, err_size, "the built-in probe directory has no _probekit.py (%s): %s",
                 catalog->kit_path, strerror(errno));
        return IC_EENV;
    }
    for (int i = 0; i < ndirs; i++) {
        int rc = ic_scan_dir(catalog, dirs[i], err, err_size);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void ic_catalog_release(struct ic_catalog *catalog)
{
    for (int i = 0; i < catalog->count; i++) {
        cJSON_Delete(catalog->libs[i].info);
        ic_libset_release(&catalog->libs[i].load_before);
    }
    free(catalog->libs);
    free(catalog->order);
    catalog->libs = NULL;
    catalog->order = NULL;
    catalog->count = catalog->order_count = 0;
    catalog->capacity = catalog->order_capacity = 0;
}

int ic_catalog_copy(const struct ic_catalog *catalog, struct ic_catalog *ret)
{
    struct ic_catalog copy = *catalog;
    copy.libs = calloc(catalog->capacity ? catalog->capacity : 1, sizeof(*copy.libs));
    copy.order = calloc(catalog->order_capacity ? catalog->order_capacity : 1, sizeof(int));
    if (!copy.libs || !copy.order) {
        free(copy.libs);
        free(copy.order);
        return IC_ENOMEM;
    }
    memcpy(copy.order, catalog->order, sizeof(int) * (size_t)catalog->order_count);
    int rc = 0;
    for (int i = 0; i < catalog->count; i++) {
        const struct ic_library *lib = &catalog->libs[i];
        copy.libs[i] = *lib;
        copy.libs[i].load_before = (struct ic_libset){0};
        copy.libs[i].info = NULL;
        if (rc == 0 && lib->info && !(copy.libs[i].info = cJSON_Duplicate(lib->info, true)))
            rc = IC_ENOMEM;
        if (rc == 0)
            rc = ic_libset_merge(&copy.libs[i].load_before, &lib->load_before);
    }
    if (rc < 0) {
        ic_catalog_release(&copy);
        return rc;
    }
    *ret = copy;
    return 0;
}

static uint32_t ic_name_set(const cJSON *list, int (*lookup)(const char *, int *), bool *ok)
{
    uint32_t set = 0;
    const cJSON *item;
    if (!cJSON_IsArray(list)) {
        *ok = false;
        return 0;
    }
    cJSON_ArrayForEach(item, list)
    {
        int value;
        if (!cJSON_IsString(item)) {
            *ok = false;
            continue;
        }
        if (lookup(item->valuestring, &value) == 0)
            set |= 1u << value;
    }
    return set;
}

/* ic_lookup_<kind>: the <kind>_from_name of a table, as an int for ic_name_set. */
#define IC_LOOKUP_AS_INT(kind, type, from_name)                                                    \
    static int ic_lookup_##kind(const char *name, int *ret)                                        \
    {                                                                                              \
        type value;                                                                                \
        int rc = from_name(name, &value);                                                          \
        if (rc == 0)                                                                               \
            *ret = (int)value;                                                                     \
        return rc;                                                                                 \
    }
IC_LOOKUP_AS_INT(dtype, enum ic_dtype, ic_dtype_from_name)
IC_LOOKUP_AS_INT(device_kind, enum ic_device_kind, ic_device_kind_from_name)
IC_LOOKUP_AS_INT(layout, enum ic_layout, ic_layout_from_name)

/* Fills per-device protocol sets from an exports or imports dict. An entry's "devices"
 * defaults to `default_devices`. */
static void ic_protocol_sets(const cJSON *dict, uint32_t default_devices, uint32_t *any,
                             uint32_t on[IC_KIND_COUNT], bool *ok)
{
    const cJSON *item;
    *any = 0;
    memset(on, 0, sizeof(uint32_t) * IC_KIND_COUNT);
    if (!cJSON_IsObject(dict)) {
        *ok = false;
        return;
    }
    cJSON_ArrayForEach(item, dict)
    {
        enum ic_protocol protocol;
        if (ic_protocol_from_id(item->string, &protocol) < 0)
            continue;
        const cJSON *devices = cJSON_GetObjectItemCaseSensitive(item, "devices");
        uint32_t kinds =
            devices ? ic_name_set(devices, ic_lookup_device_kind, ok) : default_devices;
        *any |= 1u << protocol;
        for (int k = 0; k < IC_KIND_COUNT; k++) {
            if (kinds & (1u << k))
                on[k] |= 1u << protocol;
        }
    }
}

void ic_library_set_info(struct ic_library *lib, cJSON *info)
{
    bool ok = cJSON_IsObject(info);
    cJSON_Delete(lib->info);
    lib->info = info;
    /* Every string of the info may reach a report (notes, calls): capped here, where it
     * enters, so that no view holds megabytes of one library's text. */
    if (ok && ic_json_cap_strings(info, IC_TEXT_FIELD_CAP, NULL, 0) < 0) {
        lib->state = IC_LIBRARY_INVALID;
        snprintf(lib->error, sizeof(lib->error), "out of memory while reading the probe's info");
        return;
    }
    if (ok) {
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(info, "version");
        const char *text = cJSON_IsString(version) ? version->valuestring : "?";
        ic_text_copy(lib->version, sizeof(lib->version), text, strlen(text));
        lib->dtypes =
            ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "dtypes"), ic_lookup_dtype, &ok);
        lib->layouts =
            ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "layouts"), ic_lookup_layout, &ok);
        lib->devices = ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "devices"),
                                   ic_lookup_device_kind, &ok);
        /* Exports default to the devices the library builds on, imports to the CPU. */
        ic_protocol_sets(cJSON_GetObjectItemCaseSensitive(info, "exports"), lib->devices,
                         &lib->exports, lib->exports_on, &ok);
        ic_protocol_sets(cJSON_GetObjectItemCaseSensitive(info, "imports"), 1u << IC_KIND_CPU,
                         &lib->imports, lib->imports_on, &ok);
        lib->readonly = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "readonly"));
        lib->nulls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "nulls"));
        lib->no_fork = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(info, "fork"));
        lib->compiles = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "compiles"));
    }
    if (!ok) {
        lib->state = IC_LIBRARY_INVALID;
        snprintf(lib->error, sizeof(lib->error),
                 "the probe's load() info is malformed: it needs version, devices, dtypes, "
                 "layouts, exports and imports (see probes/README.md)");
    } else {
        lib->state = IC_LIBRARY_LOADED;
    }
}

bool ic_library_no_fork(const struct ic_catalog *catalog, const char *name)
{
    int index = ic_catalog_find(catalog, name);
    return index >= 0 && catalog->libs[index].no_fork;
}

const char *ic_library_note(const struct ic_library *lib, const char *key)
{
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(lib->info, "notes");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(notes, key);
    return cJSON_IsString(note) ? note->valuestring : NULL;
}

static const cJSON *ic_library_entry(const struct ic_library *lib, bool import,
                                     enum ic_protocol protocol)
{
    const cJSON *dict = cJSON_GetObjectItemCaseSensitive(lib->info, import ? "imports" : "exports");
    return cJSON_GetObjectItemCaseSensitive(dict, ic_protocol_id(protocol));
}

const char *ic_library_call(const struct ic_library *lib, bool import, enum ic_protocol protocol)
{
    const cJSON *call =
        cJSON_GetObjectItemCaseSensitive(ic_library_entry(lib, import, protocol), "call");
    return cJSON_IsString(call) ? call->valuestring : NULL;
}

bool ic_library_export_flag(const struct ic_library *lib, enum ic_protocol protocol,
                            const char *key)
{
    return cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(ic_library_entry(lib, false, protocol), key));
}

bool ic_library_import_flag(const struct ic_library *lib, enum ic_protocol protocol,
                            const char *key)
{
    return cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(ic_library_entry(lib, true, protocol), key));
}

bool ic_library_import_takes(const struct ic_library *lib, enum ic_protocol protocol,
                             const char *keyword)
{
    const cJSON *item, *list =
        cJSON_GetObjectItemCaseSensitive(ic_library_entry(lib, true, protocol), "keywords");
    cJSON_ArrayForEach(item, list)
    {
        if (cJSON_IsString(item) && strcmp(item->valuestring, keyword) == 0)
            return true;
    }
    return false;
}
