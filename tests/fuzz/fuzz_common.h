/*
 * fuzz_common: what the libFuzzer harnesses of tests/fuzz/ share (docs/fuzzing.md).
 *
 * Contract
 * - A harness defines LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize when it needs Python)
 *   and reports a broken invariant with FUZZ_CHECK, which prints the condition and aborts, so
 *   libFuzzer saves the input as a crash artifact. A harness never exits on bad input: every
 *   input is either used or ignored.
 * - fuzz_python_start starts the embedded interpreter once per process through ic_python.h,
 *   after pre-initialising it with the plain malloc allocator: every Python object then lives
 *   in a malloc'd block, so AddressSanitizer puts redzones around it (an over-read of a
 *   Python object by our code is reported) and LeakSanitizer sees the pointers Python holds
 *   (pymalloc's arenas are mmap'd and not scanned, which would make every block a Python
 *   object points to look leaked). The GIL is held from then on; the harness is
 *   single-threaded.
 * - fuzz_py_object turns fuzz bytes into Python objects: the bytes are a Python literal
 *   (ast.literal_eval: dicts, tuples, lists, str, bytes, ints of any size, floats, None,
 *   True, False), and a dict with a single '$'-key stands for an object a literal cannot
 *   spell (an object exposing __array_interface__ or __cuda_array_interface__, one whose
 *   attributes raise, one without a truth value, an __index__ object, a bytearray, a
 *   memoryview). Returns a new reference, or NULL (no exception pending) for bytes that are
 *   no such literal.
 * - fuzz_reader reads fixed-width little-endian fields from the input; past its end every
 *   field reads as 0, so any input length is a valid structure.
 * - fuzz_cstring returns the bytes as a NUL-terminated string in a block of exactly size + 1
 *   bytes (embedded NULs shorten the string but not the block), so that AddressSanitizer
 *   reports a parser that reads past the terminator. The caller frees it.
 * - fuzz_tail places a block of `size` bytes so that it ends where an inaccessible page
 *   begins. The validators read what a producer points to through the guard (ic_guard.h),
 *   which AddressSanitizer does not see; a read past such a block is either a fault (a direct
 *   read) or an "unreadable memory" finding (a guarded one), and the harnesses check that no
 *   such finding is made when every pointer they gave is good. Each slot is one fixed
 *   mapping, reused by the next call with that slot.
 * - fuzz_region is FUZZ_REGION_SIZE readable bytes, followed by an inaccessible page: data
 *   pointers that the guard may read.
 * - The guard's entry points (ic_guard_copy, _string, _span, _view) are wrapped at link time
 *   (-Wl,--wrap, tests/fuzz/meson.build): fuzz_guard_reset zeroes the counts, fuzz_guard_calls
 *   counts the calls since, fuzz_guard_faults those that answered IC_EFAULT (memory that cannot
 *   be read). That is how a harness knows what the validator found unreadable, whatever the
 *   findings' text (which quotes the input, and so can say anything).
 * - A harness of a validator readies a struct fuzz_validation with fuzz_validation_start
 *   (have_view true, so that a validator that never sets it is caught; the guard's counts
 *   zeroed), hands its diag, view and have_view to the validator, and then checks with
 *   fuzz_validation_check what every validator promises: no Python exception left pending, no
 *   more findings than an ic_diag holds. fuzz_check_view_items checks a view's extents and
 *   dtype; fuzz_check_no_faults, for an input whose pointers were all good, fails the run (after
 *   printing the findings) when the guard found memory it could not read.
 * - fuzz_temp_path names a file in a directory private to this process (created on first
 *   use, removed at exit; the returned path is valid until the next call);
 *   fuzz_write_file replaces that file's contents with the input.
 */
#ifndef IC_FUZZ_COMMON_H
#define IC_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ic_diag.h"
#include "ic_view.h"

typedef struct _object PyObject;

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Starts Python (see the contract); aborts when it cannot, since no input could be run. */
void fuzz_python_start(void);

/* Defines the LLVMFuzzerInitialize of a harness that needs nothing but the interpreter. */
#define FUZZ_PYTHON_HARNESS()                                                                      \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                                             \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                              \
    {                                                                                              \
        (void)argc;                                                                                \
        (void)argv;                                                                                \
        fuzz_python_start();                                                                       \
        return 0;                                                                                  \
    }

/* Fails the run when `value` no longer equals `before`, the copy taken before a validator read
 * it (validators never change what they are handed). NULL `before`: nothing to compare. */
void fuzz_check_unchanged(PyObject *before, PyObject *value);

/* The Python object of a literal (see the contract); the GIL is held. */
PyObject *fuzz_py_object(const uint8_t *data, size_t size);

/* Fails the run when a validator left a Python exception pending (every validator promises
 * to clear what it caught). */
void fuzz_check_no_exception(const char *what);

struct fuzz_reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
};

void fuzz_reader_init(struct fuzz_reader *in, const uint8_t *data, size_t size);
uint8_t fuzz_u8(struct fuzz_reader *in);
uint16_t fuzz_u16(struct fuzz_reader *in);
uint32_t fuzz_u32(struct fuzz_reader *in);
uint64_t fuzz_u64(struct fuzz_reader *in);

/* A malloc'd array of exactly `count` int64 read from the input (count may be 0: a block of
 * no usable bytes, so that any read of it is reported). */
int64_t *fuzz_i64_array(struct fuzz_reader *in, size_t count);

char *fuzz_cstring(const uint8_t *data, size_t size);

enum { FUZZ_TAIL_SLOTS = 6, FUZZ_TAIL_MAX = 60 * 1024, FUZZ_REGION_SIZE = 64 * 1024 };
void *fuzz_tail(int slot, size_t size);
unsigned char *fuzz_region(void);

/* True for an address inside AddressSanitizer's shadow memory (x86-64 layout): terabytes of
 * readable zeros that no production process has. A data pointer there makes the guard probe
 * the element span page by page, terabytes long, which only re-finds that the guard's cost
 * grows with the span; the harnesses skip such inputs (docs/fuzzing.md). Always false in a
 * build without ASan. */
bool fuzz_in_asan_shadow(uint64_t address);

void fuzz_guard_reset(void);
int fuzz_guard_calls(void);
int fuzz_guard_faults(void);

/* What a validator hands back: its findings, and the view it made when have_view. */
struct fuzz_validation {
    struct ic_diag diag;
    struct ic_view view;
    bool have_view;
};

void fuzz_validation_start(struct fuzz_validation *v);
void fuzz_validation_check(const struct fuzz_validation *v, const char *validator);
void fuzz_check_view_items(const struct ic_view *view);
void fuzz_check_no_faults(const char *harness, const struct ic_diag *diag);

const char *fuzz_temp_path(const char *name);
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);

#endif
