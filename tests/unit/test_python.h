/*
 * test_python.h: starts the embedded interpreter for unit tests that build Python objects
 * (capsules, dicts, buffers) by hand. It uses the Python the build was configured with, the
 * same default the tool uses, and holds the GIL for the rest of the test.
 *
 * A test that needs Python-defined producers (classes with __array_interface__, __dlpack__,
 * ...) defines them once with test_python_define and makes instances with producer_eval or
 * producer_new. Their namespace is one per test binary, as tap.h's counters are.
 */
#ifndef IC_TEST_PYTHON_H
#define IC_TEST_PYTHON_H

#include <stdio.h>
#include <stdlib.h>

#include "ic_config.h"
#include "ic_python.h"
#include "tap.h"

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

/* The namespace the test's producers were defined in (NULL before test_python_define). */
static PyObject *test_producers;

static inline void test_python_stop(void)
{
    Py_CLEAR(test_producers);
    ic_py_leave();
    ic_py_finalize();
}

/* Runs `code` (the source of the test's producer classes) in a fresh namespace that has the
 * builtins. -1 with the exception left pending when it raises: the caller says whether that
 * bails out or skips (NumPy may be missing). */
static inline int test_python_define(const char *code)
{
    Py_CLEAR(test_producers);
    test_producers = PyDict_New();
    if (!test_producers ||
        PyDict_SetItemString(test_producers, "__builtins__", PyEval_GetBuiltins()) < 0)
        return -1;
    PyObject *result = PyRun_String(code, Py_file_input, test_producers, test_producers);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

/* "Bail out!" with `what` and the pending exception (which it clears); returns the exit status
 * of a test that cannot go on. */
static inline int test_python_bail(const char *what)
{
    struct ic_py_exc exc;
    ic_py_fetch(&exc);
    printf("Bail out! %s: %s: %s\n", what, exc.type, exc.message);
    return 1;
}

/* The main of a test whose groups of checks all run with Python: starts it, defines the
 * producers of `producers_code` (none when NULL), runs `tests` (TAP_TESTS(...)) and stops it.
 * Returns the exit status: 1 after a "Bail out!" when Python or the producers cannot be had. */
static inline int test_python_main(const char *producers_code, const tap_test *tests)
{
    if (test_python_start() < 0)
        return 1;
    if (producers_code && test_python_define(producers_code) < 0)
        return test_python_bail("cannot define the producers");
    tap_run(tests);
    test_python_stop();
    return tap_done();
}

/* A producer the test's own Python cannot make is a bug of the test, not a finding: it aborts
 * after a TAP comment that says why. */
static inline void test_python_abort(const char *what)
{
    struct ic_py_exc exc;
    ic_py_fetch(&exc);
    printf("# cannot evaluate %s: %s: %s\n", what, exc.type, exc.message);
    abort();
}

/* `expression` (such as "Good(readonly=True)") evaluated among the producers: a new reference. */
static inline PyObject *producer_eval(const char *expression)
{
    PyObject *obj = PyRun_String(expression, Py_eval_input, test_producers, test_producers);
    if (!obj)
        test_python_abort(expression);
    return obj;
}

/* An instance of the producer class `class_name`, called with `arg` (a reference the call
 * steals) or, when arg is NULL, with no argument. A new reference. */
static inline PyObject *producer_new(const char *class_name, PyObject *arg)
{
    PyObject *cls = PyDict_GetItemString(test_producers, class_name); /* borrowed */
    PyObject *obj = !cls ? NULL : arg ? PyObject_CallOneArg(cls, arg) : PyObject_CallNoArgs(cls);
    Py_XDECREF(arg);
    if (!obj)
        test_python_abort(class_name);
    return obj;
}

/* dict[key] = value, or del dict[key] when value is NULL; steals value and returns dict, so that
 * a test writes a dict broken one rule at a time as one expression:
 * check(with(base_dict(), "version", NULL)). */
static inline PyObject *with(PyObject *dict, const char *key, PyObject *value)
{
    if (value)
        PyDict_SetItemString(dict, key, value);
    else
        PyDict_DelItemString(dict, key);
    Py_XDECREF(value);
    return dict;
}

#endif
