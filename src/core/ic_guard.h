/*
 * ic_guard: reads of memory that a library points to, made so that they can never fault.
 *
 * A producer's export is a set of addresses: a DLPack capsule's managed tensor and its shape
 * and strides arrays, a Py_buffer's format, shape, strides and suboffsets, a PyArrayInterface,
 * the elements of every view. interopcheck reads them all in C; a library that points at
 * memory that is not mapped (a DLPack byte_offset of 2^40, a page it already unmapped) must
 * cost a finding against that library, not the worker.
 *
 * Contract
 * - Every function returns 0, or a negative IC_E* code: IC_EFAULT when some byte asked for
 *   cannot be read (unmapped, PROT_NONE, a file truncated under a mapping, or an address range
 *   that wraps around the address space), IC_EINVAL for NULL buffers, IC_EENV when the guard
 *   has no mechanism at all (see below). No function here ever dereferences the library's
 *   address itself: the kernel copies, and answers an unreadable byte with EFAULT.
 * - The mechanism is process_vm_readv(2) (process_vm_writev(2) for ic_guard_store) on this
 *   process's own pid: one system call per batch of up to 1024 pieces (the bytes of a copy,
 *   or one byte of each page for a check), and no signal handler, so the worker's crash
 *   reporting is untouched. The kernel refuses it for some memory the CPU can read (pages
 *   mapped with VM_IO / VM_PFNMAP, as the kernel's [vvar] page is and device drivers' pages
 *   may be), so a refusal is never the verdict alone: the refused page is tried again through
 *   a private pipe, write(2) from the address (read(2) into it for a store), which goes
 *   through the CPU's own access path and also answers EFAULT instead of faulting. Without a
 *   pipe (no file descriptor left), process_vm_readv's refusal stands.
 * - Where process_vm_readv is not available (ENOSYS on kernels or seccomp filters without
 *   it, EPERM in sandboxes that forbid it), the guard switches once, for the process, to the
 *   pipe for everything: slower (two system calls per page-sized chunk), equally safe. When not
 *   even a pipe can be made (no file descriptor left), functions return IC_EENV and read
 *   nothing: a caller reports that it cannot verify, it never reads blind.
 * - A check says the bytes were readable when it ran; memory that another thread unmaps
 *   afterwards can still fault a later direct read. What is kept for later is copied
 *   (ic_guard_copy, ic_guard_string); a compare checks every element of both views once
 *   (ic_guard_view) and reads right after, with the GIL held, so that no Python code runs
 *   in between.
 * - Ownership: the caller owns every buffer passed in; the library owns the memory read. On
 *   failure an output buffer may hold part of what was read, as each function says.
 * - Nothing here allocates or touches Python. Every function is thread-safe (the pipe is
 *   mutex-protected, and a forked child makes its own rather than sharing its parent's).
 */
#ifndef IC_GUARD_H
#define IC_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "ic_view.h"

/* Copies n bytes at the library's address `src` into `dst`. IC_EFAULT when some byte cannot
 * be read; `dst` then holds the bytes before the first unreadable page. */
int ic_guard_copy(void *dst, uintptr_t src, size_t n);

/* Writes n bytes of `src` to the library's address `dst`. IC_EFAULT when some byte cannot be
 * written (unmapped or read-only memory); the bytes before the first such page may have been
 * written. */
int ic_guard_store(uintptr_t dst, const void *src, size_t n);

/* Copies the NUL-terminated string at `src` into `dst` (size >= 1), page by page, so that a
 * string that ends just before an unmapped page is read whole. 0 when it fit;
 * IC_ERANGE when no NUL came within size - 1 bytes (dst holds them, terminated); IC_EFAULT
 * when a byte before the NUL cannot be read (dst holds what could, terminated). */
int ic_guard_string(uintptr_t src, char *dst, size_t size);

/* Checks that all n bytes from `start` can be read, copying one byte per page. IC_EFAULT
 * when one cannot; *ret_bad (may be NULL) is then the start of the first unreadable page, or
 * of the range when it wraps around the address space. */
int ic_guard_span(uintptr_t start, size_t n, uintptr_t *ret_bad);

/* Checks that every byte of every element the view addresses can be read (a strided view
 * over memory with unmapped gaps between its elements is readable). An empty view is. On
 * IC_EFAULT, *ret_bad_index (may be NULL) is the C-order index of the first element with an
 * unreadable byte and *ret_bad_address (may be NULL) that byte's page (or the element's
 * address when its bytes wrap around the address space). IC_ERANGE for a view whose span
 * does not fit in int64 (ic_view_span), and for one whose span cannot be read whole (it holds
 * an unreadable page, or is larger than 256 MiB) and whose elements are too many to walk one by
 * one (2^22 distinct elements, or 2^14 pages): it cannot be checked. */
int ic_guard_view(const struct ic_view *view, int64_t *ret_bad_index, uintptr_t *ret_bad_address);

/* How the guard reads: the mechanism of ic_guard_force, or what the automatic choice found. */
enum ic_guard_mechanism {
    IC_GUARD_AUTO = 0, /* process_vm_readv, pipe where it is refused or unavailable */
    IC_GUARD_PIPE,     /* the pipe only */
};

/* Pins the mechanism for the process: tests of the fallback use IC_GUARD_PIPE. */
void ic_guard_force(enum ic_guard_mechanism mechanism);

/* "process_vm_readv" or "pipe": what the guard uses now (for diagnostics). */
const char *ic_guard_mechanism_name(void);

#endif
