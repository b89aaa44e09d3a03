#include "ic_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ic_config.h"

static bool ic_paths_known;
static bool ic_paths_from_install;
static char ic_paths_probes[PATH_MAX];
static char ic_paths_rules[PATH_MAX + 16];
static char ic_paths_program[PATH_MAX];

static bool ic_paths_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder of /proc/self/exe into ic_paths_program, "" when unknown. */
static void ic_paths_find_program(void)
{
    ssize_t n = readlink("/proc/self/exe", ic_paths_program, sizeof(ic_paths_program) - 1);
    ic_paths_program[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(ic_paths_program, '/');
    if (slash)
        *slash = '\0';
    else
        ic_paths_program[0] = '\0';
}

/* <dir of this program>/IC_PKG_FROM_BINDIR, resolved, when it holds probes/. */
static bool ic_paths_find_package(char *out, size_t size)
{
    if (!ic_paths_program[0] && IC_PKG_FROM_BINDIR[0] != '/')
        return false;
    char joined[2 * PATH_MAX], resolved[PATH_MAX];
    if (IC_PKG_FROM_BINDIR[0] == '/')
        snprintf(joined, sizeof(joined), "%s", IC_PKG_FROM_BINDIR);
    else
        snprintf(joined, sizeof(joined), "%s/%s", ic_paths_program, IC_PKG_FROM_BINDIR);
    if (!realpath(joined, resolved))
        return false;
    snprintf(joined, sizeof(joined), "%s/probes", resolved);
    if (!ic_paths_is_dir(joined))
        return false;
    snprintf(out, size, "%s", resolved);
    return true;
}

static void ic_paths_resolve(void)
{
    if (ic_paths_known)
        return;
    ic_paths_known = true;
    ic_paths_find_program();
    char package[PATH_MAX];
    ic_paths_from_install = ic_paths_find_package(package, sizeof(package));
    if (ic_paths_from_install) {
        snprintf(ic_paths_probes, sizeof(ic_paths_probes), "%s/probes", package);
        snprintf(ic_paths_rules, sizeof(ic_paths_rules), "file://%s/rules.md", package);
    } else {
        snprintf(ic_paths_probes, sizeof(ic_paths_probes), "%s", IC_PROBE_DIR);
        snprintf(ic_paths_rules, sizeof(ic_paths_rules), "file://%s", IC_RULES_FILE);
    }
    if (IC_RULES_URL[0])
        snprintf(ic_paths_rules, sizeof(ic_paths_rules), "%s", IC_RULES_URL);
}

const char *ic_paths_probe_dir(void)
{
    ic_paths_resolve();
    return ic_paths_probes;
}

const char *ic_paths_rules_url(void)
{
    ic_paths_resolve();
    return ic_paths_rules;
}

const char *ic_paths_program_dir(void)
{
    ic_paths_resolve();
    return ic_paths_program;
}

bool ic_paths_installed(void)
{
    ic_paths_resolve();
    return ic_paths_from_install;
}
