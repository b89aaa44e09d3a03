/*
 * test_python.h: starts the embedded interpreter for unit tests that build Python objects
 * (capsules, dicts, buffers) by hand. It uses the Python the build was configured with, the
 * same default the tool uses, and holds the GIL for the rest of the test.
 */
#ifndef IC_TEST_PYTHON_H
#define IC_TEST_PYTHON_H

#include <stdio.h>

#include "ic_config.h"
#include "ic_python.h"

static inline int test_python_start(void)
{
    char err[1024];
    struct ic_py_config config = {.python = IC_BUILD_PYTHON, .sys_path = NULL};
    if (ic_py_init(&config, err, sizeof(err)) < 0) {
        printf("Bail out! cannot start Python: %s\n", err);
        return -1;
    }
    ic_py_enter();
    return 0;
}

static inline void test_python_stop(void)
{
    ic_py_leave();
    ic_py_finalize();
}

#endif
