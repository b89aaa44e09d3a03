/* Unit tests of ic_guard: reads of memory that is mapped, unmapped (munmap) or mapped without
 * access (PROT_NONE), each answered with the bytes or IC_EFAULT and never a fault. Every test
 * runs twice: with process_vm_readv, then with the pipe the guard falls back to. A test that
 * faulted would kill this binary, and meson reports the missing TAP plan. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_error.h"
#include "ic_guard.h"
#include "ic_view.h"
#include "tap.h"
#include "test_memory.h"

/* Three pages: the first readable and writable, the middle one unmapped, the last one
 * PROT_NONE. */
struct pages {
    unsigned char *base;
    size_t page;
};

static int pages_map(struct pages *p)
{
    p->page = (size_t)sysconf(_SC_PAGESIZE);
    void *base =
        mmap(NULL, 3 * p->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    p->base = base;
    for (size_t i = 0; i < p->page; i++)
        p->base[i] = (unsigned char)(i * 7 + 1);
    if (munmap(p->base + p->page, p->page) < 0 ||
        mprotect(p->base + 2 * p->page, p->page, PROT_NONE) < 0)
        return -1;
    return 0;
}

static void pages_unmap(struct pages *p)
{
    munmap(p->base, p->page);
    munmap(p->base + 2 * p->page, p->page);
}

static void test_copy(const struct pages *p, const char *how)
{
    unsigned char out[64];
    uintptr_t first = (uintptr_t)p->base, gap = first + p->page, none = first + 2 * p->page;

    memset(out, 0, sizeof(out));
    TAP_OK(ic_guard_copy(out, first + 10, sizeof(out)) == 0 &&
               memcmp(out, p->base + 10, sizeof(out)) == 0,
           "%s: a copy of mapped bytes is those bytes", how);
    TAP_OK(ic_guard_copy(out, gap, 8) == IC_EFAULT, "%s: a copy from an unmapped page is EFAULT",
           how);
    TAP_OK(ic_guard_copy(out, none, 8) == IC_EFAULT, "%s: a copy from a PROT_NONE page is EFAULT",
           how);
    memset(out, 0, sizeof(out));
    int rc = ic_guard_copy(out, gap - 16, 32);
    TAP_OK(rc == IC_EFAULT && memcmp(out, p->base + p->page - 16, 16) == 0,
           "%s: a copy running into an unmapped page is EFAULT, with the mapped bytes copied", how);
    TAP_OK(ic_guard_copy(out, UINTPTR_MAX - 4, 16) == IC_EFAULT,
           "%s: a range that wraps around the address space is EFAULT", how);
    TAP_OK(ic_guard_copy(out, (uintptr_t)1 << 40, 8) == IC_EFAULT,
           "%s: an address 2^40 (a DLPack byte_offset's worth) is EFAULT", how);
    TAP_OK(ic_guard_copy(NULL, first, 4) == IC_EINVAL && ic_guard_copy(NULL, gap, 0) == 0,
           "%s: a NULL destination is EINVAL, a copy of nothing reads nothing", how);
}

static void test_store(const struct pages *p, const char *how)
{
    uint64_t value = 0x1122334455667788ULL, back = 0;
    uintptr_t first = (uintptr_t)p->base;

    TAP_OK(ic_guard_store(first + 64, &value, sizeof(value)) == 0 &&
               (memcpy(&back, p->base + 64, sizeof(back)), back == value),
           "%s: a store into writable memory writes", how);
    TAP_OK(ic_guard_store(first + p->page, &value, sizeof(value)) == IC_EFAULT,
           "%s: a store into an unmapped page is EFAULT", how);
    mprotect(p->base, p->page, PROT_READ);
    TAP_OK(ic_guard_store(first + 64, &value, sizeof(value)) == IC_EFAULT,
           "%s: a store into read-only memory is EFAULT", how);
    mprotect(p->base, p->page, PROT_READ | PROT_WRITE);
    for (size_t i = 0; i < p->page; i++)
        p->base[i] = (unsigned char)(i * 7 + 1);
}

static void test_string(const struct pages *p, const char *how)
{
    char out[64];
    uintptr_t end = (uintptr_t)p->base + p->page; /* the unmapped page starts here */

    memcpy(p->base + p->page - 4, "abc", 4);
    TAP_OK(ic_guard_string(end - 4, out, sizeof(out)) == 0 && strcmp(out, "abc") == 0,
           "%s: a string ending just before an unmapped page is read whole", how);
    memcpy(p->base + p->page - 4, "wxyz", 4);
    TAP_OK(ic_guard_string(end - 4, out, sizeof(out)) == IC_EFAULT && strcmp(out, "wxyz") == 0,
           "%s: a string running into an unmapped page is EFAULT, with its readable start", how);
    memset(p->base + 100, 'q', 200);
    TAP_OK(ic_guard_string((uintptr_t)p->base + 100, out, 8) == IC_ERANGE &&
               strcmp(out, "qqqqqqq") == 0,
           "%s: a string longer than the buffer is ERANGE, truncated and terminated", how);
    TAP_OK(ic_guard_string(end + 8, out, sizeof(out)) == IC_EFAULT && out[0] == '\0',
           "%s: a string in an unmapped page is EFAULT and empty", how);
    for (size_t i = 0; i < p->page; i++)
        p->base[i] = (unsigned char)(i * 7 + 1);
}

static void test_span_and_view(const struct pages *p, const char *how)
{
    uintptr_t first = (uintptr_t)p->base, bad = 0;
    int64_t index = -1;

    TAP_OK(ic_guard_span(first, p->page, NULL) == 0, "%s: a mapped page is readable", how);
    TAP_OK(ic_guard_span(first + 8, 3 * p->page - 16, &bad) == IC_EFAULT && bad == first + p->page,
           "%s: a span over an unmapped page is EFAULT, naming that page", how);
    TAP_OK(ic_guard_span(first, 0, NULL) == 0, "%s: an empty span is readable", how);

    /* int32 elements at the start of the first and of the third page: the unmapped page
     * between them is no element's, so the view is readable ... */
    mprotect(p->base + 2 * p->page, p->page, PROT_READ);
    struct ic_view gapped = view_1d(p->base, 4, 2, (int64_t)(2 * p->page));
    TAP_OK(ic_guard_view(&gapped, NULL, NULL) == 0,
           "%s: a strided view whose unmapped gap holds no element is readable", how);
    /* The same gap under a broadcast of 10^12 rows: the zero-stride dimension adds no address,
     * so the walk visits two elements, not 2 x 10^12 (fuzz_dlpack: a worker busy for hours). */
    struct ic_view huge = {.data = first,
                           .itemsize = 4,
                           .ndim = 3,
                           .shape = {1000000000000, 1, 2},
                           .strides = {0, 4, (int64_t)(2 * p->page)}};
    TAP_OK(ic_guard_view(&huge, NULL, NULL) == 0,
           "%s: a broadcast of 10^12 gapped rows is checked by its two distinct elements", how);
    /* Too many distinct elements to walk one by one, in a span that cannot be read whole: not
     * checked (ERANGE), neither passed nor blamed. */
    struct ic_view countless = {.data = first,
                                .itemsize = 1,
                                .ndim = 2,
                                .shape = {(int64_t)1 << 27, 2},
                                .strides = {1, (int64_t)(2 * p->page)}};
    TAP_OK(ic_guard_view(&countless, NULL, NULL) == IC_ERANGE,
           "%s: 2^28 distinct elements across a gap are ERANGE, not walked", how);
    /* ... until its last page loses access */
    mprotect(p->base + 2 * p->page, p->page, PROT_NONE);
    index = -1;
    huge.shape[0] = 5;
    TAP_OK(ic_guard_view(&huge, &index, &bad) == IC_EFAULT && index == 1 &&
               bad == first + 2 * p->page,
           "%s: and its first bad element is named by its index in the whole view", how);
    TAP_OK(ic_guard_view(&gapped, &index, &bad) == IC_EFAULT && index == 1 &&
               bad == first + 2 * p->page,
           "%s: element 1 in a PROT_NONE page is EFAULT, naming the element and its page", how);

    /* 24 float32 ending 8 bytes into the unmapped page: elements 22 and 23 lie there */
    struct ic_view tail = view_1d(p->base + p->page - 88, 4, 24, 4);
    index = -1;
    TAP_OK(ic_guard_view(&tail, &index, &bad) == IC_EFAULT && index == 22 && bad == first + p->page,
           "%s: a contiguous view running into an unmapped page names its first element there",
           how);
    struct ic_view reversed = view_1d(p->base + p->page - 4, 4, 12, -4);
    TAP_OK(ic_guard_view(&reversed, NULL, NULL) == 0,
           "%s: a reversed view inside a mapped page is readable", how);
    struct ic_view broadcast = {
        .data = first, .itemsize = 4, .ndim = 2, .shape = {3, 4}, .strides = {0, 4}};
    TAP_OK(ic_guard_view(&broadcast, NULL, NULL) == 0,
           "%s: a zero-stride view is readable where its one row is", how);
    struct ic_view far = view_1d((const void *)((uintptr_t)1 << 40), 4, 6, 4);
    TAP_OK(ic_guard_view(&far, &index, NULL) == IC_EFAULT && index == 0,
           "%s: a view at 2^40 is EFAULT from its first element", how);
    struct ic_view wrapping = view_1d((const void *)(UINTPTR_MAX - 7), 4, 4, 4);
    TAP_OK(ic_guard_view(&wrapping, &index, NULL) == IC_EFAULT && index == 0,
           "%s: a view that wraps around the address space is EFAULT", how);
    /* A span that starts INT64_MIN bytes before the data: its size has no negation in int64
     * (fuzz_buffer_check; UBSan in scripts/test --sanitize would report the old code). */
    struct ic_view lowest = view_1d(p->base, 1, 2, INT64_MIN);
    int rc_lowest = ic_guard_view(&lowest, NULL, NULL);
    TAP_OK(rc_lowest == IC_EFAULT || rc_lowest == IC_ERANGE,
           "%s: a stride of INT64_MIN is refused, not negated (rc %d)", how, rc_lowest);
    struct ic_view empty = view_1d(p->base + p->page, 4, 0, 4);
    TAP_OK(ic_guard_view(&empty, NULL, NULL) == 0,
           "%s: an empty view reads nothing, wherever it points", how);
}

static void test_compare(const struct pages *p, const char *how)
{
    struct ic_view good = view_1d(p->base, 4, 8, 4);
    struct ic_view same = good;
    struct ic_view lost = view_1d(p->base + p->page - 16, 4, 8, 4);
    struct ic_compare_result cmp;

    TAP_OK(ic_view_compare(&good, &same, &cmp) == 0 && cmp.mismatches == 0,
           "%s: readable views compare", how);
    memset(&cmp, 0, sizeof(cmp));
    TAP_OK(ic_view_compare(&good, &lost, &cmp) == IC_EFAULT && cmp.unreadable == 2 &&
               cmp.unreadable_index == 4 && cmp.unreadable_address == (uintptr_t)p->base + p->page,
           "%s: a compare with a view into an unmapped page is EFAULT, naming the view, element "
           "and page",
           how);
    /* The caller's own view is not guarded; the library's still is, and a difference counts. */
    memset(&cmp, 0, sizeof(cmp));
    TAP_OK(ic_view_compare_own(&good, &lost, &cmp) == IC_EFAULT && cmp.unreadable == 2 &&
               cmp.unreadable_index == 4 && cmp.unreadable_address == (uintptr_t)p->base + p->page,
           "%s: ic_view_compare_own finds the other view's unmapped page as ic_view_compare does",
           how);
    /* The library's view in mapped pages, as the guard's views always are here: the guard
     * reads a byte at the start of each page, which AddressSanitizer would call an overflow of
     * a stack array. */
    unsigned char own[16];
    memcpy(own, p->base, sizeof(own));
    own[8] ^= 0xff; /* element 2 */
    struct ic_view mine = view_1d(own, 4, 4, 4);
    struct ic_view theirs = view_1d(p->base, 4, 4, 4);
    memset(&cmp, 0, sizeof(cmp));
    TAP_OK(ic_view_compare_own(&mine, &theirs, &cmp) == 0 && cmp.mismatches == 1 &&
               cmp.first_mismatch == 2,
           "%s: ic_view_compare_own counts and places a difference", how);
    char why[256] = "";
    TAP_OK(ic_view_check_readable(&lost, why, sizeof(why)) == IC_EFAULT &&
               strstr(why, "element [4]") && strstr(why, "cannot be read"),
           "%s: ic_view_check_readable says which element cannot be read: %s", how, why);
}

/* [vvar] is mapped with VM_PFNMAP, as device drivers map memory (CUDA's pinned host
 * allocations): process_vm_readv refuses it, the CPU reads it. The guard must say readable. */
static void test_special_mapping(const char *how)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long start = 0, end = 0;
    while (maps && fgets(line, sizeof(line), maps)) {
        if (strstr(line, "[vvar]") && strstr(line, " r")) {
            sscanf(line, "%lx-%lx", &start, &end);
            break;
        }
    }
    if (maps)
        fclose(maps);
    if (!start) {
        TAP_SKIP("a page that process_vm_readv refuses but the CPU reads", "no [vvar] mapping");
        return;
    }
    unsigned char byte;
    TAP_OK(ic_guard_copy(&byte, start, 1) == 0 && ic_guard_span(start, 1, NULL) == 0,
           "%s: a page that process_vm_readv refuses but the CPU reads ([vvar]) is readable", how);
}

/* A kernel or sandbox without process_vm_readv: a child under a seccomp filter that answers it
 * with ENOSYS (EPERM for process_vm_writev). The guard must notice on its own, switch to the
 * pipe, and still tell readable from unreadable. The child reports one bit per check. */
static int sandboxed_checks(const struct pages *p)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) < 0)
        return 0x80; /* no seccomp here */
    unsigned char out[16];
    uint64_t value = 42;
    int bits = 0;
    bits |= (ic_guard_copy(out, (uintptr_t)p->base, sizeof(out)) == 0 &&
             memcmp(out, p->base, sizeof(out)) == 0)
            << 0;
    bits |= (ic_guard_copy(out, (uintptr_t)p->base + p->page, 8) == IC_EFAULT) << 1;
    bits |= (strcmp(ic_guard_mechanism_name(), "pipe") == 0) << 2;
    bits |= (ic_guard_span((uintptr_t)p->base, 3 * p->page, NULL) == IC_EFAULT) << 3;
    bits |= (ic_guard_store((uintptr_t)p->base + 8, &value, sizeof(value)) == 0 && p->base[8] == 42)
            << 4;
    return bits;
}

static void test_without_process_vm_readv(const struct pages *p)
{
    ic_guard_force(IC_GUARD_AUTO);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        _exit(sandboxed_checks(p));
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
        TAP_OK(0, "the sandboxed child ran (status 0x%x)", status);
        return;
    }
    int bits = WEXITSTATUS(status);
    if (bits == 0x80) {
        TAP_SKIP("the guard without process_vm_readv", "seccomp filters cannot be installed here");
        return;
    }
    TAP_OK(bits & 0x1, "without process_vm_readv (ENOSYS): mapped bytes are still copied");
    TAP_OK(bits & 0x2, "without process_vm_readv: an unmapped page is still EFAULT");
    TAP_OK(bits & 0x4, "without process_vm_readv: the guard switched to the pipe by itself");
    TAP_OK(bits & 0x8, "without process_vm_readv: a span over a hole is EFAULT");
    TAP_OK(bits & 0x10, "without process_vm_writev (EPERM): a store still writes");
}

int main(void)
{
    struct pages p;
    if (pages_map(&p) < 0) {
        TAP_OK(0, "three pages can be mapped and protected");
        return tap_done();
    }
    const char *how[2] = {"process_vm_readv", "pipe"};
    for (int round = 0; round < 2; round++) {
        ic_guard_force(round == 0 ? IC_GUARD_AUTO : IC_GUARD_PIPE);
        TAP_OK(strcmp(ic_guard_mechanism_name(), how[round]) == 0, "the guard reads with %s",
               how[round]);
        test_copy(&p, how[round]);
        test_store(&p, how[round]);
        test_string(&p, how[round]);
        test_span_and_view(&p, how[round]);
        test_compare(&p, how[round]);
        test_special_mapping(how[round]);
    }
    test_without_process_vm_readv(&p);
    ic_guard_force(IC_GUARD_AUTO);
    pages_unmap(&p);
    return tap_done();
}
