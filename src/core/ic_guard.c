/* process_vm_readv and pipe2 need _GNU_SOURCE, which the build defines for every file. */
#include "ic_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ic_error.h"

/* process_vm_readv takes at most IOV_MAX (1024 on Linux) pieces a call. */
#define IC_GUARD_BATCH      1024
/* Pipe chunks stay within PIPE_BUF, so that a write into the (empty) pipe is all or nothing
 * for the pipe and never waits. */
#define IC_GUARD_PIPE_CHUNK 4096

/* What the kernel's process_vm_readv does for us: not tried yet, works, or is refused. */
enum { IC_VM_UNTRIED = 0, IC_VM_WORKS, IC_VM_REFUSED };

static atomic_int ic_vm_state;
static atomic_int ic_forced_pipe;

static pthread_mutex_t ic_pipe_lock = PTHREAD_MUTEX_INITIALIZER;
static int ic_pipe_fds[2] = {-1, -1};
static pid_t ic_pipe_owner; /* the process that made the pipe: a forked child makes its own */

static uintptr_t ic_page_size(void)
{
    static atomic_ulong cached;
    unsigned long size = atomic_load(&cached);
    if (!size) {
        long value = sysconf(_SC_PAGESIZE);
        size = value > 0 ? (unsigned long)value : 4096;
        atomic_store(&cached, size);
    }
    return (uintptr_t)size;
}

static uintptr_t ic_page_of(uintptr_t address)
{
    return address & ~(ic_page_size() - 1);
}

static bool ic_vm_usable(void)
{
    return !atomic_load(&ic_forced_pipe) && atomic_load(&ic_vm_state) != IC_VM_REFUSED;
}

/* Records what a failed process_vm_readv/writev says about the call itself: ENOSYS and EPERM
 * mean the kernel will not do it at all (no such call, a seccomp filter, a sandbox), anything
 * else is about the memory. Returns true when the call is refused for good. */
static bool ic_vm_refused(int error)
{
    if (error == ENOSYS || error == EPERM) {
        atomic_store(&ic_vm_state, IC_VM_REFUSED);
        return true;
    }
    return false;
}

/* --- The pipe ------------------------------------------------------------------------------ */

/* Callers hold ic_pipe_lock. IC_EENV when no pipe can be made. */
static int ic_pipe_open_locked(void)
{
    pid_t self = getpid();
    if (ic_pipe_fds[0] >= 0 && ic_pipe_owner == self)
        return 0;
    if (ic_pipe_fds[0] >= 0) {
        /* Inherited through fork: the parent's pipe, which the child must not share. */
        close(ic_pipe_fds[0]);
        close(ic_pipe_fds[1]);
        ic_pipe_fds[0] = ic_pipe_fds[1] = -1;
    }
    if (pipe2(ic_pipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
        ic_pipe_fds[0] = ic_pipe_fds[1] = -1;
        return IC_EENV;
    }
    ic_pipe_owner = self;
    return 0;
}

/* Empties the pipe, so that the next transfer starts from nothing whatever the last one left. */
static void ic_pipe_drain_locked(void)
{
    char scratch[IC_GUARD_PIPE_CHUNK];
    for (;;) {
        ssize_t got = read(ic_pipe_fds[0], scratch, sizeof(scratch));
        if (got > 0)
            continue;
        if (got < 0 && errno == EINTR)
            continue;
        return;
    }
}

/* Reads exactly `n` bytes out of the pipe into `dst` (ours, or the library's for a store).
 * Returns the bytes read: fewer when `dst` cannot be written. */
static size_t ic_pipe_take_locked(void *dst, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(ic_pipe_fds[0], (char *)dst + done, n - done);
        if (got > 0) {
            done += (size_t)got;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        break;
    }
    return done;
}

/* Moves up to `n` bytes (at most one chunk, within one page of the library's side) from `src`
 * to `dst` through the pipe: write(2) reads `src` and read(2) writes `dst`, and each answers
 * an inaccessible byte with EFAULT. Returns the bytes moved, or IC_EENV without a pipe. */
static int64_t ic_pipe_move(void *dst, const void *src, size_t n)
{
    pthread_mutex_lock(&ic_pipe_lock);
    int64_t moved = 0;
    if (ic_pipe_open_locked() < 0) {
        moved = IC_EENV;
    } else {
        ssize_t written = write(ic_pipe_fds[1], src, n);
        if (written > 0)
            moved = (int64_t)ic_pipe_take_locked(dst, (size_t)written);
        ic_pipe_drain_locked();
    }
    pthread_mutex_unlock(&ic_pipe_lock);
    return moved;
}

/* The bytes of [address, address + n) that lie in its first page (and in one pipe chunk). */
static size_t ic_chunk_at(uintptr_t address, size_t n)
{
    uintptr_t to_page_end = ic_page_size() - (address & (ic_page_size() - 1));
    size_t chunk = n < to_page_end ? n : (size_t)to_page_end;
    return chunk < IC_GUARD_PIPE_CHUNK ? chunk : IC_GUARD_PIPE_CHUNK;
}

/* --- Reads and writes ---------------------------------------------------------------------- */

/* Copies the readable front of [src, src + n) into dst: *ret_done is the count of bytes
 * copied, n when all could be read. IC_EENV when no mechanism is left. */
static int ic_read_front(void *dst, uintptr_t src, size_t n, size_t *ret_done)
{
    size_t done = 0;
    *ret_done = 0;
    if (n == 0)
        return 0;
    if (n - 1 > UINTPTR_MAX - src)
        return 0; /* wraps around the address space: nothing of it is an array */
    pid_t self = getpid();
    while (done < n) {
        char *to = (char *)dst + done;
        uintptr_t from = src + done;
        if (ic_vm_usable()) {
            struct iovec local = {.iov_base = to, .iov_len = n - done};
            struct iovec remote = {.iov_base = (void *)from, .iov_len = n - done};
            ssize_t got = process_vm_readv(self, &local, 1, &remote, 1, 0);
            if (got > 0) {
                atomic_store(&ic_vm_state, IC_VM_WORKS);
                done += (size_t)got;
                continue;
            }
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0 && ic_vm_refused(errno))
                continue; /* the rest goes through the pipe */
        }
        /* The kernel would not copy this page: ask the CPU's own path, which reads memory of
         * device drivers that process_vm_readv refuses, and fails only where a load would. */
        int64_t moved = ic_pipe_move(to, (const void *)from, ic_chunk_at(from, n - done));
        if (moved == IC_EENV && !ic_vm_usable())
            return IC_EENV;
        if (moved <= 0)
            break;
        done += (size_t)moved;
    }
    *ret_done = done;
    return 0;
}

int ic_guard_copy(void *dst, uintptr_t src, size_t n)
{
    size_t done;
    if (!dst && n > 0)
        return IC_EINVAL;
    int rc = ic_read_front(dst, src, n, &done);
    if (rc < 0)
        return rc;
    return done == n ? 0 : IC_EFAULT;
}

int ic_guard_store(uintptr_t dst, const void *src, size_t n)
{
    size_t done = 0;
    if (!src && n > 0)
        return IC_EINVAL;
    if (n > 0 && n - 1 > UINTPTR_MAX - dst)
        return IC_EFAULT;
    pid_t self = getpid();
    while (done < n) {
        uintptr_t to = dst + done;
        const char *from = (const char *)src + done;
        if (ic_vm_usable()) {
            struct iovec local = {.iov_base = (void *)from, .iov_len = n - done};
            struct iovec remote = {.iov_base = (void *)to, .iov_len = n - done};
            ssize_t put = process_vm_writev(self, &local, 1, &remote, 1, 0);
            if (put > 0) {
                done += (size_t)put;
                continue;
            }
            if (put < 0 && errno == EINTR)
                continue;
            if (put < 0 && ic_vm_refused(errno))
                continue;
        }
        int64_t moved = ic_pipe_move((void *)to, from, ic_chunk_at(to, n - done));
        if (moved == IC_EENV && !ic_vm_usable())
            return IC_EENV;
        if (moved <= 0)
            return IC_EFAULT;
        done += (size_t)moved;
    }
    return 0;
}

int ic_guard_string(uintptr_t src, char *dst, size_t size)
{
    size_t used = 0;
    if (!dst || size == 0)
        return IC_EINVAL;
    dst[0] = '\0';
    while (used < size - 1) {
        uintptr_t at = src + used;
        uintptr_t to_page_end = ic_page_size() - (at & (ic_page_size() - 1));
        size_t want = size - 1 - used < to_page_end ? size - 1 - used : (size_t)to_page_end;
        size_t done;
        int rc = ic_read_front(dst + used, at, want, &done);
        if (rc < 0) {
            dst[used] = '\0';
            return rc;
        }
        if (memchr(dst + used, '\0', done))
            return 0; /* terminated where the string ends */
        used += done;
        if (done < want) {
            dst[used] = '\0';
            return IC_EFAULT;
        }
    }
    dst[size - 1] = '\0';
    return IC_ERANGE;
}

/* --- Page checks --------------------------------------------------------------------------- */

/* Whether one page can be read, asked through the pipe (the check that decides). */
static int ic_page_readable_by_pipe(uintptr_t page, bool *ret_readable)
{
    char byte;
    int64_t moved = ic_pipe_move(&byte, (const void *)page, 1);
    if (moved == IC_EENV)
        return IC_EENV;
    *ret_readable = moved == 1;
    return 0;
}

/* Checks pages[0..count): *ret_readable is the count of leading readable pages (count when all
 * are). One byte is copied from each page: a page is readable or not as a whole. */
static int ic_pages_readable(const uintptr_t *pages, int count, int *ret_readable)
{
    char scratch[IC_GUARD_BATCH];
    struct iovec remote[IC_GUARD_BATCH];
    pid_t self = getpid();
    int done = 0;

    while (done < count) {
        if (ic_vm_usable()) {
            int batch = count - done;
            for (int i = 0; i < batch; i++)
                remote[i] = (struct iovec){.iov_base = (void *)pages[done + i], .iov_len = 1};
            struct iovec local = {.iov_base = scratch, .iov_len = (size_t)batch};
            ssize_t got = process_vm_readv(self, &local, 1, remote, (unsigned long)batch, 0);
            if (got > 0) {
                atomic_store(&ic_vm_state, IC_VM_WORKS);
                done += (int)got;
                continue; /* a short count stops at a page the next call starts with */
            }
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0 && ic_vm_refused(errno))
                continue;
        }
        bool readable = false;
        int rc = ic_page_readable_by_pipe(pages[done], &readable);
        if (rc < 0 && !ic_vm_usable())
            return rc;
        if (rc < 0 || !readable)
            break; /* without a pipe, process_vm_readv's refusal stands */
        done++;
    }
    *ret_readable = done;
    return 0;
}

int ic_guard_span(uintptr_t start, size_t n, uintptr_t *ret_bad)
{
    uintptr_t pages[IC_GUARD_BATCH];
    int count = 0, readable = 0;

    if (n == 0)
        return 0;
    if (n - 1 > UINTPTR_MAX - start) {
        if (ret_bad)
            *ret_bad = start;
        return IC_EFAULT;
    }
    uintptr_t last = ic_page_of(start + (n - 1));
    for (uintptr_t page = ic_page_of(start);; page += ic_page_size()) {
        pages[count++] = page;
        bool end = page == last;
        if (count == IC_GUARD_BATCH || end) {
            int rc = ic_pages_readable(pages, count, &readable);
            if (rc < 0)
                return rc;
            if (readable < count) {
                if (ret_bad)
                    *ret_bad = pages[readable] < start ? start : pages[readable];
                return IC_EFAULT;
            }
            count = 0;
        }
        if (end)
            return 0;
    }
}

/* The pages of a view's elements, in C order, each element's pages after the previous
 * element's; a page is listed again only when it is not the one listed last. */
struct ic_page_walk {
    uintptr_t pages[IC_GUARD_BATCH];
    int64_t owners[IC_GUARD_BATCH]; /* the element each page was listed for */
    int count;
    uintptr_t last;
    bool any;
    int64_t listed; /* pages listed in all, against IC_GUARD_WALK_PAGES */
};

/* The most pages a walk lists (16 system calls, milliseconds): elements that jump between
 * pages can list a page for every element, which a page-sized stride over 2^26 elements made
 * half a minute (fuzz_dlpack). Past it the view is IC_ERANGE, "cannot be checked". */
#define IC_GUARD_WALK_PAGES ((int64_t)1 << 14)

/* Checks the listed pages. IC_EFAULT names the first unreadable one's element and page. */
static int ic_page_walk_flush(struct ic_page_walk *walk, int64_t *ret_bad_index,
                              uintptr_t *ret_bad_address)
{
    int readable = 0;
    int rc = ic_pages_readable(walk->pages, walk->count, &readable);
    if (rc < 0)
        return rc;
    if (readable < walk->count) {
        if (ret_bad_index)
            *ret_bad_index = walk->owners[readable];
        if (ret_bad_address)
            *ret_bad_address = walk->pages[readable];
        return IC_EFAULT;
    }
    walk->count = 0;
    return 0;
}

static int ic_page_walk_add(struct ic_page_walk *walk, uintptr_t page, int64_t owner,
                            int64_t *ret_bad_index, uintptr_t *ret_bad_address)
{
    if (walk->any && page == walk->last)
        return 0;
    if (++walk->listed > IC_GUARD_WALK_PAGES)
        return IC_ERANGE;
    walk->any = true;
    walk->last = page;
    walk->pages[walk->count] = page;
    walk->owners[walk->count] = owner;
    walk->count++;
    return walk->count == IC_GUARD_BATCH ? ic_page_walk_flush(walk, ret_bad_index, ret_bad_address)
                                         : 0;
}

/* The most elements ic_guard_elements visits one by one (milliseconds): a view with
 * more distinct elements whose span cannot be read whole is IC_ERANGE, "cannot be checked",
 * rather than a worker busy for hours (fuzz_dlpack found a 4e11-element view doing that). */
#define IC_GUARD_WALK_MAX ((int64_t)1 << 22)

/* The largest span ic_guard_view reads whole (see there): 256 MiB, 64 system calls. The tool's
 * own arrays are a few hundred bytes; a library's export of more is checked element by element
 * within the walk's budgets, or is "cannot be checked". */
#define IC_GUARD_SPAN_MAX ((uint64_t)256 << 20)

/* The dimensions of `view` that move the address (extent > 1, stride != 0) in `moving`, with
 * each one's weight in a C-order index of the whole view in `weight`. The others add no
 * address: walking only these visits every address once per distinct element. */
static int ic_guard_moving_dims(const struct ic_view *view, struct ic_view *moving,
                                int64_t weight[IC_MAX_NDIM], int64_t *ret_numel)
{
    int64_t below = 1, numel = 1;
    *moving = *view;
    moving->ndim = 0;
    int64_t all_weights[IC_MAX_NDIM];
    for (int d = view->ndim - 1; d >= 0; d--) {
        all_weights[d] = below;
        below *= view->shape[d]; /* fits: ic_view_numel accepted the view */
    }
    for (int d = 0; d < view->ndim; d++) {
        if (view->shape[d] <= 1 || view->strides[d] == 0)
            continue;
        int k = moving->ndim++;
        moving->shape[k] = view->shape[d];
        moving->strides[k] = view->strides[d];
        weight[k] = all_weights[d];
        numel *= view->shape[d];
    }
    *ret_numel = numel;
    return numel > IC_GUARD_WALK_MAX ? IC_ERANGE : 0;
}

/* Every element's pages, exactly: for strided views whose span is much larger than their
 * elements, and to name the element when the span as a whole could not be read. */
static int ic_guard_elements(const struct ic_view *whole, int64_t *ret_bad_index,
                             uintptr_t *ret_bad_address)
{
    struct ic_view moving;
    int64_t weight[IC_MAX_NDIM], numel = 0;
    int rc = ic_guard_moving_dims(whole, &moving, weight, &numel);
    if (rc < 0)
        return rc;
    const struct ic_view *view = &moving;
    struct ic_page_walk walk = {.count = 0};
    int64_t index[IC_MAX_NDIM] = {0};
    int64_t offset = 0; /* of the current element from view->data */
    int64_t bad = -1;   /* the index, among the moving dimensions, of the first bad element */

    uintptr_t size = (uintptr_t)view->itemsize;
    for (int64_t n = 0; n < numel && rc == 0; n++) {
        uintptr_t first = view->data + (uintptr_t)offset; /* two's complement: a negative offset */
        bool wraps = (offset < 0 && (uintptr_t)0 - (uintptr_t)offset > view->data) ||
                     (offset >= 0 && (uintptr_t)offset > UINTPTR_MAX - view->data) ||
                     size - 1 > UINTPTR_MAX - first;
        if (wraps) {
            /* An earlier element on an unreadable page comes first. */
            rc = walk.count > 0 ? ic_page_walk_flush(&walk, &bad, ret_bad_address) : 0;
            if (rc < 0)
                break;
            bad = n;
            if (ret_bad_address)
                *ret_bad_address = first;
            rc = IC_EFAULT;
            break;
        }
        uintptr_t last = ic_page_of(first + (size - 1));
        for (uintptr_t page = ic_page_of(first); rc == 0; page += ic_page_size()) {
            rc = ic_page_walk_add(&walk, page, n, &bad, ret_bad_address);
            if (page == last)
                break;
        }
        for (int d = view->ndim - 1; d >= 0; d--) {
            if (++index[d] < view->shape[d]) {
                offset += view->strides[d];
                break;
            }
            offset -= view->strides[d] * (view->shape[d] - 1);
            index[d] = 0;
        }
    }
    if (rc == 0 && walk.count > 0)
        rc = ic_page_walk_flush(&walk, &bad, ret_bad_address);
    if (rc == IC_EFAULT && ret_bad_index) {
        /* The first element of the whole view at that address: the skipped dimensions at 0. */
        int64_t whole_index = 0;
        for (int k = view->ndim - 1; k >= 0; k--) {
            whole_index += (bad % view->shape[k]) * weight[k];
            bad /= view->shape[k];
        }
        *ret_bad_index = whole_index;
    }
    return rc;
}

int ic_guard_view(const struct ic_view *view, int64_t *ret_bad_index, uintptr_t *ret_bad_address)
{
    int64_t numel = 0, lo = 0, hi = 0;
    if (!view || view->itemsize <= 0)
        return IC_EINVAL;
    int rc = ic_view_numel(view, &numel);
    if (rc < 0)
        return rc;
    if (numel == 0)
        return 0;
    rc = ic_view_span(view, &lo, &hi);
    if (rc < 0)
        return rc;
    /* The whole span at once where it is dense (contiguous, reversed, a few strides apart):
     * one system call per 1024 pages. A sparse span (a stride far larger than the elements)
     * may have unmapped gaps that no element touches, so it is walked element by element, as
     * is a span that cannot be read whole, to name the first element that cannot. */
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    uint64_t element_bytes = 0;
    bool dense =
        !__builtin_mul_overflow((uint64_t)numel, (uint64_t)view->itemsize, &element_bytes) &&
        (span <= 16 * (uint64_t)ic_page_size() || span / 4 <= element_bytes);
    bool wraps = (lo < 0 && (uint64_t)0 - (uint64_t)lo > view->data) || /* INT64_MIN has no -lo */
                 (uint64_t)hi - 1 > UINTPTR_MAX - view->data;
    /* A span past IC_GUARD_SPAN_MAX is not read whole: a span of terabytes would take minutes
     * (under AddressSanitizer, whose shadow is terabytes of readable memory, fuzz_array_struct
     * found one), and 16 GiB still took a second (fuzz_dlpack). The budgeted walk decides. */
    if (dense && !wraps && span <= IC_GUARD_SPAN_MAX &&
        ic_guard_span(view->data + (uintptr_t)lo, (size_t)span, NULL) == 0)
        return 0;
    return ic_guard_elements(view, ret_bad_index, ret_bad_address);
}

void ic_guard_force(enum ic_guard_mechanism mechanism)
{
    atomic_store(&ic_forced_pipe, mechanism == IC_GUARD_PIPE);
}

const char *ic_guard_mechanism_name(void)
{
    return ic_vm_usable() ? "process_vm_readv" : "pipe";
}
