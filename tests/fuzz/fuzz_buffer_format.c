/* fuzz_buffer_format: the struct / PEP 3118 format parser of the buffer protocol
 * (ic_buffer_format_parse, src/protocols/ic_buffer.c), a pure function of its text. The input is
 * the format. Besides memory safety the harness checks the parser's promises (a parsed format has
 * a known prefix, a code, a repeat count and itemsize = count x the code's size; an exchanged
 * dtype only for one native code of that dtype's size) and, for every format both accept,
 * compares its itemsize with Python's struct.calcsize: the tester must size an item exactly
 * as CPython's own consumers do. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "fuzz_common.h"
#include "ic_buffer.h"
#include "ic_error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static PyObject *calcsize; /* struct.calcsize */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_python_start();
    PyObject *module = PyImport_ImportModule("struct");
    calcsize = module ? PyObject_GetAttrString(module, "calcsize") : NULL;
    FUZZ_CHECK(calcsize != NULL);
    Py_DECREF(module);
    return 0;
}

/* struct.calcsize(text), or -1 when struct does not take the format. */
static long long struct_size(const char *text)
{
    PyObject *result = PyObject_CallFunction(calcsize, "s", text);
    long long size = result ? PyLong_AsLongLong(result) : -1;
    Py_XDECREF(result);
    PyErr_Clear();
    return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    struct ic_buffer_format parsed;

    memset(&parsed, 0x5a, sizeof(parsed)); /* written only on success */
    int rc = ic_buffer_format_parse(text, &parsed);
    if (rc == 0) {
        FUZZ_CHECK(parsed.byteorder != '\0' && strchr("@=<>!^", parsed.byteorder));
        FUZZ_CHECK(parsed.native_size == (parsed.byteorder == '@' || parsed.byteorder == '^'));
        FUZZ_CHECK(parsed.code[0] != '\0' && memchr(parsed.code, '\0', sizeof(parsed.code)));
        FUZZ_CHECK(strstr(text, parsed.code) != NULL);
        FUZZ_CHECK(parsed.count >= 0 && parsed.count <= 999999999);
        FUZZ_CHECK(parsed.itemsize >= 0 &&
                   parsed.itemsize % (parsed.count ? parsed.count : 1) == 0);
        if (parsed.dtype != IC_DTYPE_INVALID) {
            const struct ic_dtype_info *info = ic_dtype_info(parsed.dtype);
            FUZZ_CHECK(info != NULL && parsed.count == 1 && info->itemsize == parsed.itemsize);
        }
        /* an embedded NUL ends the format for both parsers, as it does for a consumer */
        long long expected = struct_size(text);
        if (expected >= 0 && expected != parsed.itemsize) {
            fprintf(stderr, "format \"%s\": itemsize %lld, struct.calcsize %lld\n", text,
                    (long long)parsed.itemsize, expected);
            FUZZ_CHECK(expected == parsed.itemsize);
        }
    } else {
        FUZZ_CHECK(rc == IC_EINVAL || rc == IC_EUNSUPPORTED);
    }
    free(text);
    return 0;
}
