#include "ic_catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_error.h"

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

static int ic_scan_dir(struct ic_catalog *catalog, const char *dir, char *err, size_t err_size)
{
    DIR *handle = opendir(dir);
    if (!handle) {
        snprintf(err, err_size, "cannot read the probe directory '%s': %s", dir, strerror(errno));
        return IC_EIO;
    }
    char *names[256];
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(handle)) && count < 256) {
        size_t len = strlen(entry->d_name);
        if (len < 4 || strcmp(entry->d_name + len - 3, ".py") != 0 || entry->d_name[0] == '_' ||
            entry->d_name[0] == '.')
            continue;
        names[count] = strdup(entry->d_name);
        if (!names[count])
            break;
        count++;
    }
    closedir(handle);
    /* Sorted, so the order of the matrix does not depend on the file system. */
    qsort(names, (size_t)count, sizeof(names[0]), ic_compare_names);

    int rc = 0;
    for (int i = 0; i < count; i++) {
        char stem[IC_NAME_MAX + 8];
        size_t len = strlen(names[i]) - 3;
        snprintf(stem, sizeof(stem), "%.*s", (int)(len < sizeof(stem) ? len : sizeof(stem) - 1),
                 names[i]);
        int index = ic_catalog_find(catalog, stem);
        if (index < 0) {
            if (catalog->count == IC_MAX_LIBRARIES) {
                snprintf(err, err_size, "more than %d probes", IC_MAX_LIBRARIES);
                rc = IC_ERANGE;
                break;
            }
            index = catalog->count++;
        }
        struct ic_library *lib = &catalog->libs[index];
        cJSON_Delete(lib->info);
        memset(lib, 0, sizeof(*lib));
        snprintf(lib->name, sizeof(lib->name), "%.*s", IC_NAME_MAX - 1, stem);
        snprintf(lib->path, sizeof(lib->path), "%s/%s", dir, names[i]);
        if (!ic_name_is_valid(stem) || len >= IC_NAME_MAX) {
            lib->state = IC_LIBRARY_INVALID;
            snprintf(lib->error, sizeof(lib->error),
                     "'%s' is not a usable probe name: rename the file to lower-case letters, "
                     "digits and '_'",
                     names[i]);
        }
    }
    for (int i = 0; i < count; i++)
        free(names[i]);
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
        catalog->libs[i].info = NULL;
    }
    catalog->count = 0;
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

static int ic_lookup_dtype(const char *name, int *ret)
{
    enum ic_dtype dtype;
    int rc = ic_dtype_from_name(name, &dtype);
    if (rc == 0)
        *ret = dtype;
    return rc;
}

static int ic_lookup_device_kind(const char *name, int *ret)
{
    enum ic_device_kind kind;
    int rc = ic_device_kind_from_name(name, &kind);
    if (rc == 0)
        *ret = kind;
    return rc;
}

static int ic_lookup_layout(const char *name, int *ret)
{
    enum ic_layout layout;
    int rc = ic_layout_from_name(name, &layout);
    if (rc == 0)
        *ret = layout;
    return rc;
}

static const char *const ic_device_kind_names[IC_KIND_COUNT] = {
    [IC_KIND_CPU] = "cpu",
    [IC_KIND_CUDA] = "cuda",
};

const char *ic_device_kind_name(enum ic_device_kind kind)
{
    return ((int)kind >= 0 && kind < IC_KIND_COUNT) ? ic_device_kind_names[kind] : "invalid";
}

int ic_device_kind_from_name(const char *name, enum ic_device_kind *ret)
{
    for (int i = 0; i < IC_KIND_COUNT; i++) {
        if (strcmp(ic_device_kind_names[i], name) == 0) {
            *ret = (enum ic_device_kind)i;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}

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
        uint32_t kinds = devices ? ic_name_set(devices, ic_lookup_device_kind, ok) : default_devices;
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
    if (ok) {
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(info, "version");
        snprintf(lib->version, sizeof(lib->version), "%s",
                 cJSON_IsString(version) ? version->valuestring : "?");
        lib->dtypes = ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "dtypes"),
                                  ic_lookup_dtype, &ok);
        lib->layouts = ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "layouts"),
                                   ic_lookup_layout, &ok);
        lib->devices = ic_name_set(cJSON_GetObjectItemCaseSensitive(info, "devices"),
                                   ic_lookup_device_kind, &ok);
        /* Exports default to the devices the library builds on, imports to the CPU. */
        ic_protocol_sets(cJSON_GetObjectItemCaseSensitive(info, "exports"), lib->devices,
                         &lib->exports, lib->exports_on, &ok);
        ic_protocol_sets(cJSON_GetObjectItemCaseSensitive(info, "imports"), 1u << IC_KIND_CPU,
                         &lib->imports, lib->imports_on, &ok);
        lib->readonly = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "readonly"));
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

bool ic_library_import_flag(const struct ic_library *lib, enum ic_protocol protocol,
                            const char *key)
{
    return cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(ic_library_entry(lib, true, protocol), key));
}
