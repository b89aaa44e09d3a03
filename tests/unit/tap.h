/*
 * tap.h: a minimal TAP producer for interopcheck's C unit tests.
 *
 * Each test binary prints "ok N - name" or "not ok N - name" per assertion and "1..N" at
 * the end; Meson runs the binaries with protocol 'tap', and .ci/run counts the lines. A
 * failing assertion prints the expression and location as a TAP comment and the test goes
 * on, so one run shows every failure. tap_done() returns the exit status.
 */
#ifndef IC_TAP_H
#define IC_TAP_H

#include <stdio.h>

static int tap_count;
static int tap_failed;

#define TAP_OK(cond, ...)                                                                          \
    do {                                                                                           \
        int tap_pass_ = (cond) ? 1 : 0;                                                            \
        tap_count++;                                                                               \
        if (!tap_pass_)                                                                            \
            tap_failed++;                                                                          \
        printf("%sok %d - ", tap_pass_ ? "" : "not ", tap_count);                                  \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!tap_pass_)                                                                            \
            printf("#   failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);                         \
        fflush(stdout);                                                                            \
    } while (0)

/* A check that cannot run here: "ok N - what # SKIP why", which TAP counts as skipped. */
#define TAP_SKIP(what, why)                                                                        \
    do {                                                                                           \
        tap_count++;                                                                               \
        printf("ok %d - %s # SKIP %s\n", tap_count, (what), (why));                                \
        fflush(stdout);                                                                            \
    } while (0)

#define TAP_DIAG(...)                                                                              \
    do {                                                                                           \
        printf("# ");                                                                              \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

static inline int tap_done(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

/* A test binary's groups of checks, for the mains of test_python.h and test_files.h that run
 * them between a setup and its teardown: TAP_TESTS(test_a, test_b) lists them in order. */
typedef void (*tap_test)(void);
#define TAP_TESTS(...) ((const tap_test[]){__VA_ARGS__, NULL})

/* Runs the groups of `tests`, a list that ends with NULL, in order. */
static inline void tap_run(const tap_test *tests)
{
    for (; *tests; tests++)
        (*tests)();
}

#endif
