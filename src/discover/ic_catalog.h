/*
 * ic_catalog: the supervisor's list of libraries: which probe files exist, whether each
 * library imported, and what its probe says it can do. This is the discover stage's output.
 *
 * Contract
 * - ic_catalog_scan lists `*.py` probe files (not starting with '_') of each directory in
 *   order; a later directory's probe replaces an earlier one of the same name. Names are
 *   file stems; a file whose stem is not a valid name is kept as IC_LIBRARY_INVALID with the
 *   reason, so it is reported rather than silently ignored.
 * - Capabilities come from the probe's load() info (probes/README.md), set by
 *   ic_library_set_info, which takes ownership of the cJSON tree. Its strings are library
 *   text: they are repaired to UTF-8 and capped at IC_TEXT_FIELD_CAP bytes there
 *   (ic_json_cap_strings), and the version is cut with ic_text's marker to fit `version`.
 * - The catalog owns everything in it; ic_catalog_release frees it. No Python here: the
 *   supervisor never embeds the interpreter.
 */
#ifndef IC_CATALOG_H
#define IC_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ic_case.h"
#include "ic_libset.h"


enum ic_library_state {
    IC_LIBRARY_FOUND,        /* scanned, not loaded yet */
    IC_LIBRARY_LOADED,       /* load() returned its info */
    IC_LIBRARY_NOT_INSTALLED, /* load() raised ModuleNotFoundError for the library itself */
    IC_LIBRARY_IMPORT_ERROR, /* load() raised: the library is installed but not usable */
    IC_LIBRARY_IMPORT_CRASH, /* the worker died or hung while loading it */
    IC_LIBRARY_INVALID,      /* the probe file itself is unusable (bad name, bad info) */
};

struct ic_library {
    char name[IC_NAME_MAX];
    char path[1024];
    enum ic_library_state state;
    char version[64];
    char error[1024]; /* why it is not usable */
    double load_ms;
    cJSON *info;      /* owned; NULL until loaded */
    uint32_t dtypes;  /* bit (1 << ic_dtype) */
    uint32_t layouts; /* bit (1 << ic_layout) */
    uint32_t exports; /* bit (1 << ic_protocol), on any device */
    uint32_t imports;
    uint32_t exports_on[IC_KIND_COUNT]; /* the same, per device kind */
    uint32_t imports_on[IC_KIND_COUNT];
    uint32_t devices; /* bit (1 << ic_device_kind): where build() makes arrays now */
    bool readonly;    /* build(readonly=True) works */
    bool nulls;       /* build(valid=...) makes arrays with nulls (the Arrow nulls variants) */
    /* Discovery found a module of the library's own name imported already, by the libraries
     * before it: loading its probe next imports nothing that was not imported anyway. */
    bool preloaded;
    bool no_fork;     /* its arrays are unusable in a fork of a worker that loaded it ("fork") */
    /* Its imports and compute() compile for each new shape and dtype, once per process
     * ("compiles"): its consumer cases are not run early. */
    bool compiles;
    /* Libraries this one must be imported before, found when importing them first crashed
     * it (catalog indexes). */
    struct ic_libset load_before;
};

struct ic_catalog {
    struct ic_library *libs; /* count of them, owned; as many as the directories hold */
    int count;
    size_t capacity;     /* of libs */
    char kit_path[1024]; /* _probekit.py of the built-in probe directory */
    int *order; /* the import order workers follow (indexes), owned */
    int order_count;
    size_t order_capacity;
};

/* Scans `dirs` (the first is the built-in directory, which must hold _probekit.py). On
 * failure writes the reason into err. */
int ic_catalog_scan(struct ic_catalog *catalog, const char *const *dirs, int ndirs, char *err,
                    size_t err_size);

void ic_catalog_release(struct ic_catalog *catalog);

/* A copy of `catalog` that owns everything in it, for a reader in another thread while the
 * original goes on changing. IC_ENOMEM leaves *ret untouched. */
int ic_catalog_copy(const struct ic_catalog *catalog, struct ic_catalog *ret);

/* Index of the library called `name`, or -1. */
int ic_catalog_find(const struct ic_catalog *catalog, const char *name);

/* Whether the library called `name` says its arrays are unusable in a fork of a worker that
 * loaded it (its load() info's "fork": false); false for a name the catalog lacks. */
bool ic_library_no_fork(const struct ic_catalog *catalog, const char *name);

/* Parses a probe's load() info into the library's capability sets; takes ownership of
 * `info` in every case. A malformed info makes the library IC_LIBRARY_INVALID. */
void ic_library_set_info(struct ic_library *lib, cJSON *info);

/* The probe's note on why `key` (a dtype or layout name) is missing, or NULL. */
const char *ic_library_note(const struct ic_library *lib, const char *key);

/* The "call" text of an export or import entry, or NULL. */
const char *ic_library_call(const struct ic_library *lib, bool import, enum ic_protocol protocol);

/* True when the import entry's "keywords" list names `keyword` ("copy", "device"): the
 * library's import function takes it as from_dlpack does. */
bool ic_library_import_takes(const struct ic_library *lib, enum ic_protocol protocol,
                             const char *keyword);

/* True for the export entry's boolean `key` ("c_api": the DLPack C exchange API). */
bool ic_library_export_flag(const struct ic_library *lib, enum ic_protocol protocol,
                            const char *key);

/* True for the import entry's boolean `key` ("zero_copy", "typed"). */
bool ic_library_import_flag(const struct ic_library *lib, enum ic_protocol protocol,
                            const char *key);

#endif
