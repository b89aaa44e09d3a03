/* ic_cuda_standin.c: the host-memory stand-in for libcuda.so.1 (see ic_cuda_standin.h).
 *
 * Each entry point is defined with cuda.h's own prototype, so the compiler checks the
 * signatures, and under cuda.h's #defined name, so the exported symbol is the one the real
 * driver exports (cuMemAlloc defines cuMemAlloc_v2). Built twice: the "broken" variant
 * (-DICSI_BROKEN) lacks cuLaunchKernel and cuMemFree_v2, for the missing-entry-point test. */
#include "ic_cuda_standin.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/ic_verify_logic.h"

#define ICSI_MAX_DEVICES        8
#define ICSI_DEVICE_HANDLE_BASE 100
#define ICSI_DRIVER_VERSION     13000
#define ICSI_PARAMS_MAX         256

/* --- Objects ---------------------------------------------------------------------------------- */

struct CUctx_st {
    int ordinal;
    int retained; /* primary context references; current or used only while > 0 */
};

struct icsi_kernel {
    const char *name;
    size_t params_size;
    void (*run_thread)(const void *params, int64_t thread, int64_t thread_count);
};

struct CUfunc_st {
    const struct icsi_kernel *kernel;
    CUmodule module;
};

#define ICSI_KERNEL_COUNT 4

struct CUmod_st {
    CUcontext context;
    struct CUfunc_st functions[ICSI_KERNEL_COUNT];
};

enum icsi_op_kind { ICSI_OP_KERNEL, ICSI_OP_MEMSET, ICSI_OP_COPY, ICSI_OP_WAIT };

struct icsi_op {
    enum icsi_op_kind kind;
    union {
        struct {
            const struct icsi_kernel *kernel;
            int64_t threads;
            unsigned char params[ICSI_PARAMS_MAX];
        } launch;
        struct {
            void *dst;
            int value;
            size_t size;
        } memset;
        struct {
            void *dst;
            const void *src;
            size_t size;
        } copy;
        struct {
            CUstream stream;
            uint64_t position; /* run that stream's queue up to here first */
        } wait;
    };
};

/* Positions count operations since the stream was created: `done` have run, `submitted`
 * were queued; the queue holds the ones in between, oldest at `head`. */
struct CUstream_st {
    CUcontext context;
    unsigned int flags;
    bool destroyed; /* kept until reset, since events and waits may still name it */
    uint64_t done, submitted;
    struct icsi_op *queue;
    size_t head, count, capacity;
    struct CUstream_st *next;
};

struct CUevent_st {
    CUstream stream; /* NULL: nothing to wait for (never recorded, or recorded on stream 0) */
    uint64_t position;
};

struct icsi_range {
    uintptr_t base;
    size_t size;
    enum icsi_memory kind;
    int ordinal;
    bool owned; /* allocated by the stand-in, which frees it */
    struct icsi_range *next;
};

/* --- State ------------------------------------------------------------------------------------ */

static struct {
    bool initialised;
    pid_t init_pid; /* the process that called cuInit: its forked children cannot use CUDA */
    CUresult init_result;
    int device_count;
    struct CUctx_st contexts[ICSI_MAX_DEVICES];
    CUcontext current;
    struct CUstream_st *streams;
    struct icsi_range *ranges;
    unsigned long kernels_run;
    CUresult module_failure;
    char module_failure_log[512];
} icsi = {.device_count = 2};

/* --- Kernels: the per-thread bodies of ic_verify_logic.h -------------------------------------- */

static void icsi_run_compare(const void *params, int64_t thread, int64_t thread_count)
{
    ic_verify_compare_thread(params, thread, thread_count);
}

static void icsi_run_check_pattern(const void *params, int64_t thread, int64_t thread_count)
{
    ic_verify_check_pattern_thread(params, thread, thread_count);
}

static void icsi_run_fill_pattern(const void *params, int64_t thread, int64_t thread_count)
{
    ic_verify_fill_pattern_thread(params, thread, thread_count);
}

static void icsi_run_spin(const void *params, int64_t thread, int64_t thread_count)
{
    ic_verify_spin_thread(params, thread, thread_count);
}

static const struct icsi_kernel icsi_kernels[ICSI_KERNEL_COUNT] = {
    {IC_VERIFY_COMPARE, sizeof(struct ic_verify_compare_args), icsi_run_compare},
    {IC_VERIFY_CHECK_PATTERN, sizeof(struct ic_verify_pattern_args), icsi_run_check_pattern},
    {IC_VERIFY_FILL_PATTERN, sizeof(struct ic_verify_pattern_args), icsi_run_fill_pattern},
    {IC_VERIFY_SPIN, sizeof(struct ic_verify_spin_args), icsi_run_spin},
};

_Static_assert(sizeof(struct ic_verify_pattern_args) <= ICSI_PARAMS_MAX &&
                   sizeof(struct ic_verify_compare_args) <= ICSI_PARAMS_MAX,
               "kernel parameters outgrew the queue's copy");

/* --- Memory ----------------------------------------------------------------------------------- */

/* The tracked range holding all of [address, address + size), or NULL. */
static struct icsi_range *icsi_find(uintptr_t address, size_t size)
{
    for (struct icsi_range *r = icsi.ranges; r; r = r->next) {
        if (address >= r->base && address - r->base < r->size &&
            size <= r->size - (address - r->base))
            return r;
    }
    return NULL;
}

static struct icsi_range *icsi_track(uintptr_t base, size_t size, enum icsi_memory kind,
                                     int ordinal, bool owned)
{
    struct icsi_range *range = calloc(1, sizeof(*range));
    if (!range)
        return NULL;
    *range = (struct icsi_range){.base = base,
                                 .size = size,
                                 .kind = kind,
                                 .ordinal = ordinal,
                                 .owned = owned,
                                 .next = icsi.ranges};
    icsi.ranges = range;
    return range;
}

/* Unlinks the range that starts at `base` and is of one of the kinds in `kinds` (a bit mask
 * of 1 << enum icsi_memory); returns it, or NULL. */
static struct icsi_range *icsi_untrack(uintptr_t base, unsigned int kinds)
{
    for (struct icsi_range **link = &icsi.ranges; *link; link = &(*link)->next) {
        struct icsi_range *r = *link;
        if (r->base == base && (kinds & (1u << r->kind))) {
            *link = r->next;
            return r;
        }
    }
    return NULL;
}

/* Initialised, in the process that did it (a forked child is not). */
static bool icsi_usable(void)
{
    return icsi.initialised && icsi.init_pid == getpid();
}

static CUresult icsi_allocate(uintptr_t *ret, size_t size, enum icsi_memory kind)
{
    if (!icsi_usable())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* 256-byte alignment, as cuMemAlloc guarantees. */
    size_t rounded = (size + 255) / 256 * 256;
    void *memory = aligned_alloc(256, rounded);
    if (!memory)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(memory, kind == ICSI_DEVICE ? 0xcd : 0, rounded);
    if (!icsi_track((uintptr_t)memory, size, kind, icsi.current->ordinal, true)) {
        free(memory);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ret = (uintptr_t)memory;
    return CUDA_SUCCESS;
}

/* --- Streams ---------------------------------------------------------------------------------- */

static bool icsi_is_default_stream(CUstream stream)
{
    return stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

static bool icsi_is_stream(CUstream stream)
{
    for (struct CUstream_st *s = icsi.streams; s; s = s->next) {
        if (s == stream)
            return !s->destroyed;
    }
    return false;
}

static void icsi_execute(const struct icsi_op *op);

/* Runs `stream`'s queue up to `position`, first running whatever each wait depends on. */
static void icsi_run(CUstream stream, uint64_t position)
{
    while (stream->done < position) {
        struct icsi_op *op = &stream->queue[stream->head++];
        if (op->kind == ICSI_OP_WAIT)
            icsi_run(op->wait.stream, op->wait.position);
        else
            icsi_execute(op);
        stream->done++;
    }
    if (stream->head == stream->count)
        stream->head = stream->count = 0;
}

/* What the legacy default stream of `context` waits for: every blocking stream there. */
static void icsi_run_blocking_streams(CUcontext context)
{
    for (struct CUstream_st *s = icsi.streams; s; s = s->next) {
        if (s->context == context && !(s->flags & CU_STREAM_NON_BLOCKING))
            icsi_run(s, s->submitted);
    }
}

static void icsi_run_all_streams(CUcontext context)
{
    for (struct CUstream_st *s = icsi.streams; s; s = s->next) {
        if (!context || s->context == context)
            icsi_run(s, s->submitted);
    }
}

static void icsi_execute(const struct icsi_op *op)
{
    switch (op->kind) {
    case ICSI_OP_KERNEL:
        for (int64_t thread = 0; thread < op->launch.threads; thread++)
            op->launch.kernel->run_thread(op->launch.params, thread, op->launch.threads);
        icsi.kernels_run++;
        break;
    case ICSI_OP_MEMSET:
        memset(op->memset.dst, op->memset.value, op->memset.size);
        break;
    case ICSI_OP_COPY:
        memcpy(op->copy.dst, op->copy.src, op->copy.size);
        break;
    case ICSI_OP_WAIT:
        icsi_run(op->wait.stream, op->wait.position);
        break;
    }
}

/* Queues `op` on `stream`, or runs it at once on the legacy default stream after the work that
 * stream waits for. */
static CUresult icsi_submit(CUstream stream, const struct icsi_op *op)
{
    if (!icsi_usable())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (icsi_is_default_stream(stream)) {
        icsi_run_blocking_streams(icsi.current);
        icsi_execute(op);
        return CUDA_SUCCESS;
    }
    /* Work goes on streams of the current context; a wait may cross contexts. */
    if (!icsi_is_stream(stream) || (op->kind != ICSI_OP_WAIT && stream->context != icsi.current))
        return CUDA_ERROR_INVALID_HANDLE;
    if (stream->count == stream->capacity) {
        size_t capacity = stream->capacity ? 2 * stream->capacity : 16;
        struct icsi_op *queue = realloc(stream->queue, capacity * sizeof(*queue));
        if (!queue)
            return CUDA_ERROR_OUT_OF_MEMORY;
        stream->queue = queue;
        stream->capacity = capacity;
    }
    stream->queue[stream->count++] = *op;
    stream->submitted++;
    return CUDA_SUCCESS;
}

/* --- Hooks ------------------------------------------------------------------------------------ */

void icsi_reset(void)
{
    while (icsi.streams) {
        struct CUstream_st *s = icsi.streams;
        icsi.streams = s->next;
        free(s->queue);
        free(s);
    }
    while (icsi.ranges) {
        struct icsi_range *r = icsi.ranges;
        icsi.ranges = r->next;
        if (r->owned)
            free((void *)r->base);
        free(r);
    }
    memset(&icsi, 0, sizeof(icsi));
    icsi.device_count = 2;
}

void icsi_set_device_count(int count)
{
    icsi.device_count = count < 0 ? 0 : count > ICSI_MAX_DEVICES ? ICSI_MAX_DEVICES : count;
}

void icsi_set_init_result(CUresult result)
{
    icsi.init_result = result;
}

int icsi_register_range(void *base, size_t size, enum icsi_memory kind, int ordinal)
{
    return icsi_track((uintptr_t)base, size, kind, ordinal, false) ? 0 : -1;
}

void icsi_unregister_range(void *base)
{
    free(icsi_untrack((uintptr_t)base, 1u << ICSI_DEVICE | 1u << ICSI_HOST | 1u << ICSI_MANAGED));
}

size_t icsi_pending(CUstream stream)
{
    if (icsi_is_default_stream(stream) || !icsi_is_stream(stream))
        return 0;
    return (size_t)(stream->submitted - stream->done);
}

unsigned long icsi_kernels_run(void)
{
    return icsi.kernels_run;
}

void icsi_fail_next_module_load(CUresult result, const char *log)
{
    icsi.module_failure = result;
    snprintf(icsi.module_failure_log, sizeof(icsi.module_failure_log), "%s", log);
}

/* --- Driver entry points: initialisation and devices ------------------------------------------ */

#define ICSI_REQUIRE_INIT()                                                                        \
    do {                                                                                           \
        if (!icsi_usable())                                                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    static const struct {
        CUresult code;
        const char *name;
    } names[] = {
#define ICSI_NAME(code) {code, #code}
        ICSI_NAME(CUDA_SUCCESS),
        ICSI_NAME(CUDA_ERROR_INVALID_VALUE),
        ICSI_NAME(CUDA_ERROR_OUT_OF_MEMORY),
        ICSI_NAME(CUDA_ERROR_NOT_INITIALIZED),
        ICSI_NAME(CUDA_ERROR_NO_DEVICE),
        ICSI_NAME(CUDA_ERROR_INVALID_DEVICE),
        ICSI_NAME(CUDA_ERROR_INVALID_IMAGE),
        ICSI_NAME(CUDA_ERROR_INVALID_CONTEXT),
        ICSI_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU),
        ICSI_NAME(CUDA_ERROR_INVALID_PTX),
        ICSI_NAME(CUDA_ERROR_NOT_FOUND),
        ICSI_NAME(CUDA_ERROR_INVALID_HANDLE),
        ICSI_NAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
        ICSI_NAME(CUDA_ERROR_NOT_SUPPORTED),
#undef ICSI_NAME
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].code == error) {
            *pStr = names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (icsi.init_result != CUDA_SUCCESS)
        return icsi.init_result;
    if (icsi.initialised && icsi.init_pid != getpid())
        return CUDA_ERROR_NOT_INITIALIZED; /* a forked child: the real driver refuses it too */
    icsi.initialised = true;
    icsi.init_pid = getpid();
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    *driverVersion = ICSI_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    ICSI_REQUIRE_INIT();
    *count = icsi.device_count;
    return CUDA_SUCCESS;
}

/* The ordinal of a device handle, or -1. */
static int icsi_ordinal(CUdevice device)
{
    int ordinal = device - ICSI_DEVICE_HANDLE_BASE;
    return ordinal >= 0 && ordinal < icsi.device_count ? ordinal : -1;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ICSI_REQUIRE_INIT();
    if (ordinal < 0 || ordinal >= icsi.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ICSI_DEVICE_HANDLE_BASE + ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ICSI_REQUIRE_INIT();
    if (icsi_ordinal(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "interopcheck stand-in GPU %d", icsi_ordinal(dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    ICSI_REQUIRE_INIT();
    if (icsi_ordinal(dev) < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) { /* an H100 SXM's, except for the multiprocessors */
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = 9;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *pi = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = 2; /* a small grid: the stand-in runs every thread on the host */
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        *pi = 2619000; /* kHz */
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        *pi = 5120; /* bits */
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* --- Contexts --------------------------------------------------------------------------------- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ICSI_REQUIRE_INIT();
    int ordinal = icsi_ordinal(dev);
    if (ordinal < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    icsi.contexts[ordinal].ordinal = ordinal;
    icsi.contexts[ordinal].retained++;
    *pctx = &icsi.contexts[ordinal];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ICSI_REQUIRE_INIT();
    int ordinal = icsi_ordinal(dev);
    if (ordinal < 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (icsi.contexts[ordinal].retained == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    icsi.contexts[ordinal].retained--;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ICSI_REQUIRE_INIT();
    if (ctx &&
        (ctx < icsi.contexts || ctx >= icsi.contexts + ICSI_MAX_DEVICES || ctx->retained == 0))
        return CUDA_ERROR_INVALID_CONTEXT;
    icsi.current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    ICSI_REQUIRE_INIT();
    *ctx = icsi.current;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    ICSI_REQUIRE_INIT();
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ICSI_DEVICE_HANDLE_BASE + icsi.current->ordinal;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    ICSI_REQUIRE_INIT();
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    icsi_run_all_streams(icsi.current);
    return CUDA_SUCCESS;
}

/* --- Modules and launches --------------------------------------------------------------------- */

/* The first word of every fatbin (cuda's fatbinary.h calls it FATBIN_MAGIC). */
#define ICSI_FATBIN_MAGIC 0xba55ed50u

static void icsi_write_log(unsigned int numOptions, const CUjit_option *options,
                           void **optionValues, const char *text)
{
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned int i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            buffer = optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)optionValues[i];
    }
    if (buffer && size > 0)
        snprintf(buffer, size, "%s", text);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    ICSI_REQUIRE_INIT();
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (icsi.module_failure != CUDA_SUCCESS) {
        CUresult result = icsi.module_failure;
        icsi.module_failure = CUDA_SUCCESS;
        icsi_write_log(numOptions, options, optionValues, icsi.module_failure_log);
        return result;
    }
    uint32_t magic;
    memcpy(&magic, image, sizeof(magic));
    if (magic != ICSI_FATBIN_MAGIC) {
        icsi_write_log(numOptions, options, optionValues, "the image is not a fatbin");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    struct CUmod_st *loaded = calloc(1, sizeof(*loaded));
    if (!loaded)
        return CUDA_ERROR_OUT_OF_MEMORY;
    loaded->context = icsi.current;
    for (int i = 0; i < ICSI_KERNEL_COUNT; i++)
        loaded->functions[i] = (struct CUfunc_st){.kernel = &icsi_kernels[i], .module = loaded};
    *module = loaded;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ICSI_REQUIRE_INIT();
    for (int i = 0; i < ICSI_KERNEL_COUNT; i++) {
        if (strcmp(hmod->functions[i].kernel->name, name) == 0) {
            *hfunc = &hmod->functions[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

/* Two thousand resident threads per multiprocessor, as on most GPUs. */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize)
{
    ICSI_REQUIRE_INIT();
    if (!func || blockSize < 1 || blockSize > 1024 || dynamicSMemSize > 48 * 1024)
        return CUDA_ERROR_INVALID_VALUE;
    *numBlocks = 2048 / blockSize;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ICSI_REQUIRE_INIT();
    free(hmod);
    return CUDA_SUCCESS;
}

#ifndef ICSI_BROKEN
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    ICSI_REQUIRE_INIT();
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (f->module->context != icsi.current)
        return CUDA_ERROR_INVALID_HANDLE; /* a kernel of another context's module */
    uint64_t block = (uint64_t)blockDimX * blockDimY * blockDimZ;
    uint64_t grid = (uint64_t)gridDimX * gridDimY * gridDimZ;
    if (block == 0 || block > 1024 || grid == 0 || sharedMemBytes > 48 * 1024 || !kernelParams ||
        extra)
        return CUDA_ERROR_INVALID_VALUE;
    /* The parameters are copied now, as the driver does: the caller's may be gone when the
     * kernel runs. */
    struct icsi_op op = {.kind = ICSI_OP_KERNEL};
    op.launch.kernel = f->kernel;
    op.launch.threads = (int64_t)(grid * block);
    memcpy(op.launch.params, kernelParams[0], f->kernel->params_size);
    return icsi_submit(hStream, &op);
}
#endif

/* --- Memory ----------------------------------------------------------------------------------- */

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    uintptr_t pointer;
    CUresult result = icsi_allocate(&pointer, bytesize, ICSI_DEVICE);
    if (result == CUDA_SUCCESS)
        *dptr = pointer;
    return result;
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
    uintptr_t pointer;
    CUresult result = icsi_allocate(&pointer, bytesize, ICSI_HOST);
    if (result == CUDA_SUCCESS)
        *pp = (void *)pointer;
    return result;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t pointer;
    CUresult result = icsi_allocate(&pointer, bytesize, ICSI_MANAGED);
    if (result == CUDA_SUCCESS)
        *dptr = pointer;
    return result;
}

/* Frees an allocation of one of `kinds` that starts at `base`. Like the driver's free, it
 * first waits for all work (the memory may still be in use). */
static CUresult icsi_free(uintptr_t base, unsigned int kinds)
{
    ICSI_REQUIRE_INIT();
    icsi_run_all_streams(NULL);
    struct icsi_range *range = icsi_untrack(base, kinds);
    if (!range)
        return CUDA_ERROR_INVALID_VALUE;
    if (range->owned)
        free((void *)range->base);
    free(range);
    return CUDA_SUCCESS;
}

#ifndef ICSI_BROKEN
CUresult cuMemFree(CUdeviceptr dptr)
{
    return icsi_free(dptr, 1u << ICSI_DEVICE | 1u << ICSI_MANAGED);
}
#endif

CUresult cuMemFreeHost(void *p)
{
    return icsi_free((uintptr_t)p, 1u << ICSI_HOST);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    ICSI_REQUIRE_INIT();
    if (!icsi_find(dstDevice, N))
        return CUDA_ERROR_INVALID_VALUE;
    struct icsi_op op = {.kind = ICSI_OP_MEMSET};
    op.memset.dst = (void *)dstDevice;
    op.memset.value = uc;
    op.memset.size = N;
    return icsi_submit(hStream, &op);
}

static CUresult icsi_copy(void *dst, const void *src, size_t size, uintptr_t device_side,
                          CUstream stream)
{
    ICSI_REQUIRE_INIT();
    if (!icsi_find(device_side, size))
        return CUDA_ERROR_INVALID_VALUE;
    struct icsi_op op = {.kind = ICSI_OP_COPY};
    op.copy.dst = dst;
    op.copy.src = src;
    op.copy.size = size;
    return icsi_submit(stream, &op);
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return icsi_copy((void *)dstDevice, srcHost, ByteCount, dstDevice, NULL);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return icsi_copy(dstHost, (const void *)srcDevice, ByteCount, srcDevice, NULL);
}

/* The host buffer must stay alive until the copy runs, as with the driver. */
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                           CUstream hStream)
{
    return icsi_copy((void *)dstDevice, srcHost, ByteCount, dstDevice, hStream);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return icsi_copy(dstHost, (const void *)srcDevice, ByteCount, srcDevice, hStream);
}

/* What the driver reports: 0 for memory it does not know, HOST for page-locked memory, and
 * DEVICE for device and managed memory (IS_MANAGED tells those apart). */
static unsigned int icsi_memory_type(const struct icsi_range *range)
{
    if (!range)
        return 0;
    return range->kind == ICSI_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    ICSI_REQUIRE_INIT();
    const struct icsi_range *range = icsi_find(ptr, 1);
    for (unsigned int i = 0; i < numAttributes; i++) {
        switch (attributes[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: /* unsigned int */
            *(unsigned int *)data[i] = icsi_memory_type(range);
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: /* int; -2 for unknown memory, as the driver */
            *(int *)data[i] = range ? range->ordinal : -2;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = range ? range->base : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[i] = range ? range->size : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: /* a one-byte boolean */
            *(bool *)data[i] = range && range->kind == ICSI_MANAGED;
            break;
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *(CUcontext *)data[i] = range ? &icsi.contexts[range->ordinal] : NULL;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE; /* not modelled: fail loudly */
        }
    }
    return CUDA_SUCCESS;
}

/* --- Streams and events ----------------------------------------------------------------------- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ICSI_REQUIRE_INIT();
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *stream = calloc(1, sizeof(*stream));
    if (!stream)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stream->context = icsi.current;
    stream->flags = Flags;
    stream->next = icsi.streams;
    icsi.streams = stream;
    *phStream = stream;
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream)
{
    ICSI_REQUIRE_INIT();
    if (icsi_is_default_stream(hStream) || !icsi_is_stream(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    icsi_run(hStream, hStream->submitted); /* queued work still completes on a GPU */
    hStream->destroyed = true;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    ICSI_REQUIRE_INIT();
    if (icsi_is_default_stream(hStream)) {
        if (!icsi.current)
            return CUDA_ERROR_INVALID_CONTEXT;
        *pctx = icsi.current;
        return CUDA_SUCCESS;
    }
    if (!icsi_is_stream(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    *pctx = hStream->context;
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    ICSI_REQUIRE_INIT();
    if (icsi_is_default_stream(hStream)) {
        if (!icsi.current)
            return CUDA_ERROR_INVALID_CONTEXT;
        icsi_run_blocking_streams(icsi.current);
        return CUDA_SUCCESS;
    }
    if (!icsi_is_stream(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    icsi_run(hStream, hStream->submitted);
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ICSI_REQUIRE_INIT();
    (void)Flags;
    if (!icsi.current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *phEvent = calloc(1, sizeof(**phEvent));
    return *phEvent ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    ICSI_REQUIRE_INIT();
    if (icsi_is_default_stream(hStream)) {
        /* Stream 0's work runs at once, so the event is complete when recorded. */
        if (!icsi.current)
            return CUDA_ERROR_INVALID_CONTEXT;
        icsi_run_blocking_streams(icsi.current);
        hEvent->stream = NULL;
        return CUDA_SUCCESS;
    }
    if (!icsi_is_stream(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    hEvent->stream = hStream;
    hEvent->position = hStream->submitted;
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    ICSI_REQUIRE_INIT();
    if (hEvent->stream)
        icsi_run(hEvent->stream, hEvent->position);
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent)
{
    ICSI_REQUIRE_INIT();
    free(hEvent); /* waits copied what they need */
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    ICSI_REQUIRE_INIT();
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hEvent->stream)
        return CUDA_SUCCESS; /* nothing recorded: nothing to wait for */
    struct icsi_op op = {.kind = ICSI_OP_WAIT};
    op.wait.stream = hEvent->stream;
    op.wait.position = hEvent->position;
    return icsi_submit(hStream, &op);
}
