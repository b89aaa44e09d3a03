/*
 * test_memory.h: host memory for the tests that point interopcheck at it: a page right before
 * one that is not mapped (what a producer that points at memory that is not there points into),
 * and 1-D views over host memory.
 */
#ifndef IC_TEST_MEMORY_H
#define IC_TEST_MEMORY_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ic_view.h"

/* Two pages: the first mapped and writable, the second unmapped (munmap after mapping both, so
 * that nothing else is placed there by chance). Returns the first; the hole starts *ret_page
 * bytes after it. The caller unmaps the first page (or keeps it for the test's life). */
static inline unsigned char *page_before_hole(size_t *ret_page)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *base =
        mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || munmap(base + page, page) < 0)
        abort();
    *ret_page = page;
    return base;
}

/* n elements of `itemsize` bytes from `data`, `stride` bytes apart, on the CPU, of no dtype. */
static inline struct ic_view view_1d(const void *data, int itemsize, int64_t n, int64_t stride)
{
    struct ic_view view = {0};
    view.data = (uintptr_t)data;
    view.itemsize = itemsize;
    view.dtype = IC_DTYPE_INVALID;
    view.device_type = IC_DEVICE_CPU;
    view.ndim = 1;
    view.shape[0] = n;
    view.strides[0] = stride;
    return view;
}

#endif
