/*
 * test_files.h: a temporary directory for the tests that hand files to a reader (reports,
 * expectations), the files written into it, and its removal at the end.
 */
#ifndef IC_TEST_FILES_H
#define IC_TEST_FILES_H

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

/* Makes the directory of the mkdtemp template `dir` (rewritten in place). False, after a
 * "Bail out!" line, when it cannot: the test has nowhere to write. */
static inline bool test_tmpdir_make(char *dir)
{
    if (mkdtemp(dir))
        return true;
    printf("Bail out! cannot make a temporary directory %s\n", dir);
    return false;
}

/* Writes `len` bytes, NUL bytes included, to the file `name` of `dir`. Returns its path, in one
 * of four static buffers so that a test can hold a few at once. A file that could not be written
 * is left for the reader under test to find missing. */
static inline const char *test_write_file(const char *dir, const char *name, const void *bytes,
                                          size_t len)
{
    static char paths[4][512];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof(paths[0]), "%s/%s", dir, name);
    FILE *file = fopen(path, "wb");
    if (file) {
        fwrite(bytes, 1, len, file);
        fclose(file);
    }
    return path;
}

static inline int test_remove_one(const char *path, const struct stat *st, int type,
                                  struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* Removes `dir` and everything in it; a TAP comment says when it could not. */
static inline void test_tmpdir_remove(const char *dir)
{
    if (nftw(dir, test_remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        TAP_DIAG("could not remove %s", dir);
}

/* The main of a test that writes its files into `dir` (a mkdtemp template, rewritten in place):
 * makes the directory, runs `tests` (TAP_TESTS(...)) and removes it. Returns the exit status:
 * 1 after a "Bail out!" when the directory cannot be made. */
static inline int test_files_main(char *dir, const tap_test *tests)
{
    if (!test_tmpdir_make(dir))
        return 1;
    tap_run(tests);
    test_tmpdir_remove(dir);
    return tap_done();
}

#endif
