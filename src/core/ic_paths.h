/*
 * ic_paths: where this program's own files are, the probes and the rules document.
 *
 * Contract
 * - An installed interopcheck (meson install, pip) keeps them in the package folder
 *   "interopcheck" of the Python environment it was installed into; the program finds that
 *   folder from its own path (/proc/self/exe) through the relative path from its bindir that
 *   the build fixed (IC_PKG_FROM_BINDIR), so a moved install still finds its files. A program
 *   run from its build tree has no such folder beside it and uses the source tree's.
 * - Each answer is worked out once, on first use, and kept for the life of the process in
 *   static storage; call it first before threads exist. There is always an answer: when the
 *   installed folder cannot be found the source tree's path is given, and the reader that
 *   opens it reports what is missing.
 */
#ifndef IC_PATHS_H
#define IC_PATHS_H

#include <stdbool.h>

/* The built-in probe folder: installed, else <source>/probes. */
const char *ic_paths_probe_dir(void);

/* The rules document's URL, which findings link to: -Drules_url when the build was given one,
 * else file:// of rules.md installed beside the probes, else of <source>/docs/rules.md. */
const char *ic_paths_rules_url(void);

/* The folder holding this program (its /proc/self/exe, links resolved); "" when unknown. */
const char *ic_paths_program_dir(void);

/* Whether this program runs from an install (its package folder was found). */
bool ic_paths_installed(void);

#endif
