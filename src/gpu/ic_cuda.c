/* ic_cuda.c: the CUDA Driver API through dlopen, and the GPU verification (see ic_cuda.h).
 * Built only with GPU support (meson.build, "CUDA"); ic_cuda_disabled.c stands in otherwise. */
#include "ic_cuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_config.h"
#include "ic_error.h"
#include "kernels/ic_verify_logic.h"

_Static_assert(IC_CUDA_MAX_NDIM == IC_VERIFY_MAX_NDIM, "ic_cuda.h and the kernels disagree");
/* Entry points are stored from dlsym's void * (POSIX guarantees the representation). */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers are not void *");

/* The embedded kernels (scripts/embed_binary.py, run by src/gpu/kernels/meson.build). */
extern const unsigned char ic_verify_fatbin[];
extern const size_t ic_verify_fatbin_size;

/* Every driver entry point this module calls, once. cuda.h #defines many of these names to the
 * symbol of their current ABI (cuMemAlloc is cuMemAlloc_v2, cuStreamDestroy is
 * cuStreamDestroy_v2). The field of the table, every call through it, and the name dlsym looks
 * up (IC_CUDA_SYMBOL_NAME stringifies after expansion) all go through that #define, so they
 * name the same symbol, typed by cuda.h's own prototype. */
#define IC_CUDA_ENTRY_POINTS(X)                                                                    \
    X(cuGetErrorName)                                                                              \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxGetDevice)                                                                              \
    X(cuModuleLoadDataEx)                                                                          \
    X(cuModuleGetFunction)                                                                         \
    X(cuModuleUnload)                                                                              \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuLaunchKernel)                                                                              \
    X(cuPointerGetAttributes)                                                                      \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemsetD8Async)                                                                             \
    X(cuMemcpyHtoD)                                                                                \
    X(cuMemcpyDtoH)                                                                                \
    X(cuMemcpyDtoHAsync)                                                                           \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamGetCtx)                                                                              \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamWaitEvent)                                                                           \
    X(cuEventCreate)                                                                               \
    X(cuEventRecord)                                                                               \
    X(cuEventDestroy)

struct ic_cuda_api {
#define IC_CUDA_API_FIELD(name) __typeof__(&name) name;
    IC_CUDA_ENTRY_POINTS(IC_CUDA_API_FIELD)
#undef IC_CUDA_API_FIELD
};

#define IC_CUDA_STRINGIFY(text)   #text
#define IC_CUDA_SYMBOL_NAME(name) IC_CUDA_STRINGIFY(name)

static const struct ic_cuda_symbol {
    const char *name;
    size_t offset;
} ic_cuda_symbols[] = {
#define IC_CUDA_SYMBOL(name) {IC_CUDA_SYMBOL_NAME(name), offsetof(struct ic_cuda_api, name)},
    IC_CUDA_ENTRY_POINTS(IC_CUDA_SYMBOL)
#undef IC_CUDA_SYMBOL
};

/* Calls the entry point `fn` and turns its CUresult into 0 or an IC_E* code with "fn failed:
 * CUDA_ERROR_..." in err. `fn` is spelled as documented; #fn keeps that spelling. */
#define IC_CUDA_CALL(cuda, err, err_size, fn, ...)                                                 \
    ic_cuda_result((cuda), #fn, (cuda)->api.fn(__VA_ARGS__), (err), (err_size))

#define IC_CUDA_REASON_MAX  1024
#define IC_CUDA_JIT_LOG_MAX 4096

struct ic_cuda_kernel {
    const char *name;
    CUfunction function;
    /* Blocks of IC_VERIFY_BLOCK threads the whole GPU holds at once: a grid-stride loop over
     * more blocks would only queue them behind the resident ones. */
    unsigned int grid_limit;
};

/* Per device, set up on first use: a context is retained only for devices that get work. */
struct ic_cuda_device {
    CUdevice device;
    CUcontext context; /* the primary context, retained; NULL until first used */
    CUmodule module;   /* the verification kernels; NULL until first needed */
    struct ic_cuda_kernel compare, check_pattern, fill_pattern, spin;
    /* The counters of every check on this device. Allocated once with the module and freed at
     * close, because cuMemFree synchronises the whole device: a per-call free would order the
     * streams of a stream-ordering check and hide exactly the bug it looks for. */
    CUdeviceptr counters;
};

struct ic_cuda {
    enum ic_cuda_state state;
    void *library;
    bool initialised; /* cuInit succeeded: the driver then runs threads of its own */
    struct ic_cuda_api api;
    int device_count;
    int driver_version;
    int current; /* the device whose primary context this handle last made current, or -1 */
    struct ic_cuda_device *devices;
    char reason[IC_CUDA_REASON_MAX];
};

static void ic_cuda_set_reason(struct ic_cuda *cuda, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ic_cuda_set_reason(struct ic_cuda *cuda, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cuda->reason, sizeof(cuda->reason), fmt, ap);
    va_end(ap);
}

static const char *ic_cuda_error_name(const struct ic_cuda *cuda, CUresult result)
{
    const char *name = NULL;
    if (cuda->api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
        return "an error the driver does not name";
    return name;
}

static int ic_cuda_result(const struct ic_cuda *cuda, const char *call, CUresult result, char *err,
                          size_t err_size)
{
    if (result == CUDA_SUCCESS)
        return 0;
    snprintf(err, err_size, "%s failed: %s (%d)", call, ic_cuda_error_name(cuda, result),
             (int)result);
    return result == CUDA_ERROR_OUT_OF_MEMORY ? IC_ENOMEM : IC_EIO;
}

/* Fills the table; a driver without some entry point is BROKEN, and the reason names every
 * missing one, so one look at it says how old the driver is. */
static int ic_cuda_load_entry_points(struct ic_cuda *cuda, const char *path)
{
    char missing[IC_CUDA_REASON_MAX / 2] = "";
    int missing_count = 0;
    size_t used = 0;
    for (size_t i = 0; i < sizeof(ic_cuda_symbols) / sizeof(ic_cuda_symbols[0]); i++) {
        void *address = dlsym(cuda->library, ic_cuda_symbols[i].name);
        if (address) {
            memcpy((char *)&cuda->api + ic_cuda_symbols[i].offset, &address, sizeof(address));
            continue;
        }
        if (used < sizeof(missing))
            used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%s",
                                     missing_count ? ", " : "", ic_cuda_symbols[i].name);
        missing_count++;
    }
    if (missing_count == 0)
        return 0;
    cuda->state = IC_CUDA_BROKEN;
    ic_cuda_set_reason(cuda, "the CUDA driver %s lacks %d entry point%s interopcheck needs: %s",
                       path, missing_count, missing_count == 1 ? "" : "s", missing);
    return IC_ENOTFOUND;
}

/* Versions are 1000 * major + 10 * minor (13000 is 13.0). */
static void ic_cuda_format_version(int version, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", version / 1000, version % 1000 / 10);
}

/* Initialises the driver and describes the devices. Leaves the state READY or says why not. */
static int ic_cuda_start(struct ic_cuda *cuda, const char *path)
{
    char err[256];
    CUresult result = cuda->api.cuInit(0);
    if (result == CUDA_ERROR_NO_DEVICE) {
        cuda->state = IC_CUDA_NO_DEVICE;
        ic_cuda_set_reason(cuda, "the CUDA driver %s finds no GPU (cuInit: CUDA_ERROR_NO_DEVICE)",
                           path);
        return 0;
    }
    if (result != CUDA_SUCCESS) {
        ic_cuda_result(cuda, "cuInit", result, err, sizeof(err));
        cuda->state = IC_CUDA_BROKEN;
        ic_cuda_set_reason(cuda, "the CUDA driver %s does not work: %s", path, err);
        return 0;
    }
    cuda->initialised = true;
    if (IC_CUDA_CALL(cuda, err, sizeof(err), cuDriverGetVersion, &cuda->driver_version) < 0 ||
        IC_CUDA_CALL(cuda, err, sizeof(err), cuDeviceGetCount, &cuda->device_count) < 0) {
        cuda->state = IC_CUDA_BROKEN;
        ic_cuda_set_reason(cuda, "the CUDA driver %s does not work: %s", path, err);
        return 0;
    }
    char version[32];
    ic_cuda_format_version(cuda->driver_version, version, sizeof(version));
    if (cuda->device_count <= 0) {
        cuda->device_count = 0;
        cuda->state = IC_CUDA_NO_DEVICE;
        ic_cuda_set_reason(cuda, "the CUDA driver %s (%s) reports no device", path, version);
        return 0;
    }
    cuda->devices = calloc((size_t)cuda->device_count, sizeof(*cuda->devices));
    if (!cuda->devices)
        return IC_ENOMEM;
    int used =
        snprintf(cuda->reason, sizeof(cuda->reason), "CUDA driver %s (%s), %d device%s:", version,
                 path, cuda->device_count, cuda->device_count == 1 ? "" : "s");
    for (int i = 0; i < cuda->device_count; i++) {
        struct ic_cuda_device *dev = &cuda->devices[i];
        char name[128] = "?";
        int major = 0, minor = 0;
        if (IC_CUDA_CALL(cuda, err, sizeof(err), cuDeviceGet, &dev->device, i) < 0 ||
            IC_CUDA_CALL(cuda, err, sizeof(err), cuDeviceGetName, name, (int)sizeof(name),
                         dev->device) < 0 ||
            IC_CUDA_CALL(cuda, err, sizeof(err), cuDeviceGetAttribute, &major,
                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device) < 0 ||
            IC_CUDA_CALL(cuda, err, sizeof(err), cuDeviceGetAttribute, &minor,
                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device) < 0) {
            cuda->state = IC_CUDA_BROKEN;
            ic_cuda_set_reason(cuda, "the CUDA driver %s cannot describe device %d: %s", path, i,
                               err);
            return 0;
        }
        if (used < (int)sizeof(cuda->reason))
            used += snprintf(cuda->reason + used, sizeof(cuda->reason) - (size_t)used,
                             "%s %d %s (sm_%d%d)", i ? "," : "", i, name, major, minor);
    }
    cuda->state = IC_CUDA_READY;
    return 0;
}

int ic_cuda_open(struct ic_cuda **ret)
{
    struct ic_cuda *cuda = calloc(1, sizeof(*cuda));
    if (!cuda)
        return IC_ENOMEM;
    cuda->current = -1;
    /* Tests point IC_CUDA_LIBRARY at the host-memory stand-in (tests/cuda_standin/). */
    const char *path = getenv("IC_CUDA_LIBRARY");
    if (!path || !*path)
        path = "libcuda.so.1";
    cuda->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cuda->library) {
        const char *why = dlerror();
        cuda->state = IC_CUDA_NO_DRIVER;
        ic_cuda_set_reason(cuda, "no CUDA driver: cannot load %s (%s)", path,
                           why ? why : "dlopen gave no reason");
    } else if (ic_cuda_load_entry_points(cuda, path) == 0 && ic_cuda_start(cuda, path) < 0) {
        ic_cuda_close(cuda);
        return IC_ENOMEM;
    }
    *ret = cuda;
    return 0;
}

void ic_cuda_close(struct ic_cuda *cuda)
{
    if (!cuda)
        return;
    char err[256];
    for (int i = 0; cuda->devices && i < cuda->device_count; i++) {
        struct ic_cuda_device *dev = &cuda->devices[i];
        if (!dev->context)
            continue;
        /* Failures are ignored: nothing can be done about them at close. */
        IC_CUDA_CALL(cuda, err, sizeof(err), cuCtxSetCurrent, dev->context);
        if (dev->counters)
            IC_CUDA_CALL(cuda, err, sizeof(err), cuMemFree, dev->counters);
        if (dev->module)
            IC_CUDA_CALL(cuda, err, sizeof(err), cuModuleUnload, dev->module);
        IC_CUDA_CALL(cuda, err, sizeof(err), cuDevicePrimaryCtxRelease, dev->device);
    }
    free(cuda->devices);
    /* An initialised driver keeps threads of its own: unloading its code under them would
     * crash the process later, so the library stays loaded. */
    if (cuda->library && !cuda->initialised)
        dlclose(cuda->library);
    free(cuda);
}

enum ic_cuda_state ic_cuda_state(const struct ic_cuda *cuda)
{
    return cuda->state;
}

const char *ic_cuda_reason(const struct ic_cuda *cuda)
{
    return cuda->reason;
}

int ic_cuda_device_count(const struct ic_cuda *cuda)
{
    return cuda->device_count;
}

int ic_cuda_driver_version(const struct ic_cuda *cuda)
{
    return cuda->driver_version;
}

bool ic_cuda_built_with_kernels(void)
{
    return true;
}

const char *ic_cuda_kernel_architectures(void)
{
    return IC_CUDA_ARCHITECTURES;
}

static int ic_cuda_require_ready(const struct ic_cuda *cuda, char *err, size_t err_size)
{
    if (cuda->state == IC_CUDA_READY)
        return 0;
    snprintf(err, err_size, "no GPU work is possible: %s", cuda->reason);
    return IC_EUNSUPPORTED;
}

/* The thread's current context, to put back afterwards; NULL when there is none or the
 * driver is not ready. */
static CUcontext ic_cuda_save_context(struct ic_cuda *cuda)
{
    CUcontext current = NULL;
    if (cuda && cuda->state == IC_CUDA_READY && cuda->api.cuCtxGetCurrent(&current) != CUDA_SUCCESS)
        current = NULL;
    return current;
}

static void ic_cuda_restore_context(struct ic_cuda *cuda, CUcontext saved)
{
    if (cuda && cuda->state == IC_CUDA_READY)
        cuda->api.cuCtxSetCurrent(saved);
}

/* Makes device `ordinal`'s primary context current, retaining it on first use. The primary
 * context is the one the array libraries use, so their pointers, streams and events are
 * valid in it. */
static int ic_cuda_enter(struct ic_cuda *cuda, int ordinal, struct ic_cuda_device **ret, char *err,
                         size_t err_size)
{
    int rc = ic_cuda_require_ready(cuda, err, err_size);
    if (rc < 0)
        return rc;
    if (ordinal < 0 || ordinal >= cuda->device_count) {
        snprintf(err, err_size, "there is no CUDA device %d (the driver reports %d)", ordinal,
                 cuda->device_count);
        return IC_EINVAL;
    }
    struct ic_cuda_device *dev = &cuda->devices[ordinal];
    if (!dev->context) {
        rc =
            IC_CUDA_CALL(cuda, err, err_size, cuDevicePrimaryCtxRetain, &dev->context, dev->device);
        if (rc < 0) {
            dev->context = NULL;
            return rc;
        }
    }
    rc = IC_CUDA_CALL(cuda, err, err_size, cuCtxSetCurrent, dev->context);
    if (rc < 0)
        return rc;
    cuda->current = ordinal;
    *ret = dev;
    return 0;
}

/* The device for work that names none: the one used last, else device 0. */
static int ic_cuda_default_device(const struct ic_cuda *cuda)
{
    return cuda->current >= 0 ? cuda->current : 0;
}

/* Makes some context current for work whose device does not matter (copies and frees of
 * unified addresses): the one used last, else device 0's. */
static int ic_cuda_enter_any(struct ic_cuda *cuda, char *err, size_t err_size)
{
    struct ic_cuda_device *dev;
    return ic_cuda_enter(cuda, ic_cuda_default_device(cuda), &dev, err, err_size);
}

/* Loads the kernels into the device's context on first use. The JIT's logs are kept: a
 * failure (say, a GPU older than every architecture in the fatbin) says why in err and in
 * the handle's reason. */
static int ic_cuda_load_kernels(struct ic_cuda *cuda, struct ic_cuda_device *dev, int ordinal,
                                char *err, size_t err_size)
{
    if (dev->module)
        return 0;
    char error_log[IC_CUDA_JIT_LOG_MAX] = "", info_log[IC_CUDA_JIT_LOG_MAX] = "";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)sizeof(error_log), info_log,
                      (void *)(uintptr_t)sizeof(info_log)};
    CUresult result = cuda->api.cuModuleLoadDataEx(
        &dev->module, ic_verify_fatbin, sizeof(options) / sizeof(options[0]), options, values);
    if (result != CUDA_SUCCESS) {
        dev->module = NULL;
        error_log[sizeof(error_log) - 1] = info_log[sizeof(info_log) - 1] = '\0';
        const char *log = error_log[0] ? error_log : info_log;
        char call[128];
        ic_cuda_result(cuda, "cuModuleLoadDataEx", result, call, sizeof(call));
        snprintf(err, err_size,
                 "the verification kernels (%s, %zu bytes) do not load on device %d: %s; JIT "
                 "log: %s",
                 IC_CUDA_ARCHITECTURES, ic_verify_fatbin_size, ordinal, call,
                 log[0] ? log : "(empty)");
        ic_cuda_set_reason(cuda, "%s", err);
        return result == CUDA_ERROR_OUT_OF_MEMORY ? IC_ENOMEM : IC_EIO;
    }
    struct {
        struct ic_cuda_kernel *kernel;
        const char *name;
    } kernels[] = {
        {&dev->compare, IC_VERIFY_COMPARE},
        {&dev->check_pattern, IC_VERIFY_CHECK_PATTERN},
        {&dev->fill_pattern, IC_VERIFY_FILL_PATTERN},
        {&dev->spin, IC_VERIFY_SPIN},
    };
    int multiprocessors = 0;
    int rc = IC_CUDA_CALL(cuda, err, err_size, cuDeviceGetAttribute, &multiprocessors,
                          CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev->device);
    for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]) && rc == 0; i++) {
        struct ic_cuda_kernel *kernel = kernels[i].kernel;
        int resident = 0;
        kernel->name = kernels[i].name;
        rc = IC_CUDA_CALL(cuda, err, err_size, cuModuleGetFunction, &kernel->function, dev->module,
                          kernel->name);
        if (rc == 0)
            rc = IC_CUDA_CALL(cuda, err, err_size, cuOccupancyMaxActiveBlocksPerMultiprocessor,
                              &resident, kernel->function, IC_VERIFY_BLOCK, 0);
        kernel->grid_limit = (unsigned int)(resident > 0 ? resident : 1) *
                             (unsigned int)(multiprocessors > 0 ? multiprocessors : 1);
    }
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuMemAlloc, &dev->counters,
                          sizeof(struct ic_verify_counters));
    if (rc < 0) {
        char ignored[128]; /* the first failure is the one to report */
        IC_CUDA_CALL(cuda, ignored, sizeof(ignored), cuModuleUnload, dev->module);
        dev->module = NULL;
        dev->counters = 0;
        return rc;
    }
    return 0;
}

/* The legacy default stream (0, or CU_STREAM_LEGACY as DLPack and the CUDA Array Interface
 * spell it as 1) and the per-thread default stream (2) belong to whichever context is current. */
static bool ic_cuda_is_default_stream(uintptr_t stream)
{
    return stream == 0 || stream == (uintptr_t)CU_STREAM_LEGACY ||
           stream == (uintptr_t)CU_STREAM_PER_THREAD;
}

/* The device whose primary context owns `stream`; `fallback` for a default stream. */
static int ic_cuda_stream_device(struct ic_cuda *cuda, uintptr_t stream, int fallback, int *ret,
                                 char *err, size_t err_size)
{
    if (ic_cuda_is_default_stream(stream)) {
        *ret = fallback;
        return 0;
    }
    CUcontext context;
    CUdevice device;
    int rc = IC_CUDA_CALL(cuda, err, err_size, cuStreamGetCtx, (CUstream)stream, &context);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuCtxSetCurrent, context);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuCtxGetDevice, &device);
    if (rc < 0)
        return rc;
    for (int i = 0; i < cuda->device_count; i++) {
        if (cuda->devices[i].device != device)
            continue;
        struct ic_cuda_device *dev;
        rc = ic_cuda_enter(cuda, i, &dev, err, err_size);
        if (rc < 0)
            return rc;
        if (dev->context != context) {
            /* Our kernels live in the primary context; a launch on another context's stream
             * would fail with an invalid handle, so say why instead. */
            snprintf(err, err_size,
                     "stream %#llx belongs to a context of device %d other than its primary "
                     "context",
                     (unsigned long long)stream, i);
            return IC_EUNSUPPORTED;
        }
        *ret = i;
        return 0;
    }
    snprintf(err, err_size, "stream %#llx belongs to a device the driver did not list",
             (unsigned long long)stream);
    return IC_EIO;
}

/* The device a view names: its id for device memory; pinned and managed memory is reachable
 * from every device and carries device id 0 by convention, so it names none (-1). */
static int ic_cuda_view_device(const struct ic_view *view)
{
    /* Not device memory, or a protocol that does not say (the CUDA Array Interface): the
     * stream decides. */
    if (view->device_type != IC_DEVICE_CUDA || view->device_id < 0)
        return -1;
    /* An id past every device stays one, for ic_cuda_enter to refuse. */
    return view->device_id > INT_MAX ? INT_MAX : (int)view->device_id;
}

/* Picks the device that runs work on `stream` over the given views (either may be NULL),
 * makes its primary context current and loads the kernels there. */
static int ic_cuda_prepare(struct ic_cuda *cuda, uintptr_t stream, const struct ic_view *a,
                           const struct ic_view *b, struct ic_cuda_device **ret, char *err,
                           size_t err_size)
{
    int rc = ic_cuda_require_ready(cuda, err, err_size);
    if (rc < 0)
        return rc;
    int want = a ? ic_cuda_view_device(a) : -1;
    int other = b ? ic_cuda_view_device(b) : -1;
    if (want >= 0 && other >= 0 && want != other) {
        snprintf(err, err_size, "the views live on different devices (%d and %d)", want, other);
        return IC_EINVAL;
    }
    if (want < 0)
        want = other;
    int ordinal;
    rc = ic_cuda_stream_device(cuda, stream, want >= 0 ? want : ic_cuda_default_device(cuda),
                               &ordinal, err, err_size);
    if (rc < 0)
        return rc;
    if (want >= 0 && want != ordinal) {
        snprintf(err, err_size, "stream %#llx belongs to device %d, the view to device %d",
                 (unsigned long long)stream, ordinal, want);
        return IC_EINVAL;
    }
    struct ic_cuda_device *dev;
    rc = ic_cuda_enter(cuda, ordinal, &dev, err, err_size);
    if (rc == 0)
        rc = ic_cuda_load_kernels(cuda, dev, ordinal, err, err_size);
    if (rc == 0)
        *ret = dev;
    return rc;
}

static int ic_cuda_launch(struct ic_cuda *cuda, const struct ic_cuda_kernel *kernel,
                          unsigned int blocks, unsigned int threads, uintptr_t stream, void *params,
                          char *err, size_t err_size)
{
    void *arguments[] = {params};
    CUresult result = cuda->api.cuLaunchKernel(kernel->function, blocks, 1, 1, threads, 1, 1, 0,
                                               (CUstream)stream, arguments, NULL);
    if (result == CUDA_SUCCESS)
        return 0;
    char call[64];
    snprintf(call, sizeof(call), "cuLaunchKernel(%s)", kernel->name);
    return ic_cuda_result(cuda, call, result, err, err_size);
}

/* Blocks of IC_VERIFY_BLOCK threads for `numel` elements: one element per thread, or the
 * resident maximum, whose threads then loop over the rest. */
static unsigned int ic_cuda_blocks(const struct ic_cuda_kernel *kernel, int64_t numel)
{
    int64_t blocks = (numel + IC_VERIFY_BLOCK - 1) / IC_VERIFY_BLOCK;
    return blocks < (int64_t)kernel->grid_limit ? (unsigned int)blocks : kernel->grid_limit;
}

/* Runs a check kernel on `stream` and waits for its counters. Everything goes on `stream`
 * (the counters are reset and read back with asynchronous calls): a synchronous call would
 * run on the legacy default stream and could order streams the check must leave alone. */
static int ic_cuda_run_check(struct ic_cuda *cuda, struct ic_cuda_device *dev,
                             const struct ic_cuda_kernel *kernel, int64_t numel, uintptr_t stream,
                             void *params, struct ic_compare_result *ret, char *err,
                             size_t err_size)
{
    CUstream s = (CUstream)stream;
    struct ic_verify_counters counters;
    int rc = IC_CUDA_CALL(cuda, err, err_size, cuMemsetD8Async, dev->counters, 0,
                          sizeof(counters.mismatches), s);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuMemsetD8Async,
                          dev->counters + offsetof(struct ic_verify_counters, first_mismatch), 0xff,
                          sizeof(counters.first_mismatch), s);
    if (rc == 0)
        rc = ic_cuda_launch(cuda, kernel, ic_cuda_blocks(kernel, numel), IC_VERIFY_BLOCK, stream,
                            params, err, err_size);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuMemcpyDtoHAsync, &counters, dev->counters,
                          sizeof(counters), s);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuStreamSynchronize, s);
    if (rc < 0)
        return rc;
    if (counters.mismatches > (unsigned long long)numel ||
        (counters.mismatches > 0 && counters.first_mismatch >= (unsigned long long)numel)) {
        snprintf(err, err_size, "%s reported %llu mismatches, the first at %llu, of %lld elements",
                 kernel->name, counters.mismatches, counters.first_mismatch, (long long)numel);
        return IC_EIO;
    }
    ret->compared = numel;
    ret->mismatches = (int64_t)counters.mismatches;
    ret->first_mismatch = counters.mismatches ? (int64_t)counters.first_mismatch : -1;
    return 0;
}

/* The widest of 8, 4, 2, 1 bytes that divides `width` (the width allowed so far), the address
 * and every stride: the kernels may then read each element in whole words of that size. */
static int ic_cuda_load_width(int width, uintptr_t address, int ndim, const int64_t *strides)
{
    for (;;) {
        bool fits = address % (uintptr_t)width == 0;
        for (int d = 0; d < ndim && fits; d++)
            fits = strides[d] % width == 0;
        if (fits || width == 1)
            return width;
        width /= 2;
    }
}

static int ic_cuda_widest_word(int itemsize)
{
    return itemsize % 8 == 0 ? 8 : itemsize % 4 == 0 ? 4 : itemsize % 2 == 0 ? 2 : 1;
}

/* The dimensions a kernel gets: `shape` and two stride sets (IC_MAX_NDIM entries each) copied
 * into the ret_ arrays and merged there, on the host, where every dimension fits, so that a view
 * of many dimensions of extent 1 (ndim32) or walked contiguously reaches the kernel in a few.
 * IC_EUNSUPPORTED (err says so) when more than IC_CUDA_MAX_NDIM are left. */
static int ic_cuda_kernel_dims(int ndim, const int64_t *shape, const int64_t *first,
                               const int64_t *second, int64_t *ret_shape, int64_t *ret_first,
                               int64_t *ret_second, int *ret_ndim, char *err, size_t err_size)
{
    memcpy(ret_shape, shape, IC_MAX_NDIM * sizeof(int64_t));
    memcpy(ret_first, first, IC_MAX_NDIM * sizeof(int64_t));
    memcpy(ret_second, second, IC_MAX_NDIM * sizeof(int64_t));
    *ret_ndim = ic_view_merge_dims(ndim, ret_shape, ret_first, ret_second);
    if (*ret_ndim > IC_CUDA_MAX_NDIM) {
        snprintf(err, err_size,
                 "%d dimensions are left after merging, more than the %d the GPU kernels take",
                 *ret_ndim, IC_CUDA_MAX_NDIM);
        return IC_EUNSUPPORTED;
    }
    return 0;
}

static int ic_cuda_compare_unscoped(struct ic_cuda *cuda, const struct ic_view *a,
                                    const struct ic_view *b, uintptr_t stream,
                                    struct ic_compare_result *ret, char *err, size_t err_size)
{
    if (!ic_view_same_shape(a, b) || a->itemsize != b->itemsize || a->itemsize <= 0 ||
        a->ndim < 0 || a->ndim > IC_MAX_NDIM) {
        snprintf(err, err_size, "the views differ in shape or item size");
        return IC_EINVAL;
    }
    int64_t numel;
    int rc = ic_view_numel(a, &numel);
    if (rc < 0) {
        snprintf(err, err_size, "the element count of the views overflows");
        return rc;
    }
    struct ic_cuda_device *dev;
    rc = ic_cuda_prepare(cuda, stream, a, b, &dev, err, err_size);
    if (rc < 0)
        return rc;
    if (numel == 0) {
        *ret = (struct ic_compare_result){.compared = 0, .mismatches = 0, .first_mismatch = -1};
        return 0;
    }
    int64_t shape[IC_MAX_NDIM], a_strides[IC_MAX_NDIM], b_strides[IC_MAX_NDIM];
    int ndim;
    rc = ic_cuda_kernel_dims(a->ndim, a->shape, a->strides, b->strides, shape, a_strides, b_strides,
                             &ndim, err, err_size);
    if (rc < 0)
        return rc;
    struct ic_verify_compare_args args = {
        .a = a->data,
        .b = b->data,
        .counters = dev->counters,
        .numel = numel,
        .ndim = ndim,
        .itemsize = a->itemsize,
        .compare_mode = ic_view_compare_mode(a, b),
    };
    memcpy(args.shape, shape, sizeof(args.shape));
    memcpy(args.a_strides, a_strides, sizeof(args.a_strides));
    memcpy(args.b_strides, b_strides, sizeof(args.b_strides));
    int width = ic_cuda_widest_word(a->itemsize);
    width = ic_cuda_load_width(width, a->data, ndim, a_strides);
    args.load_width = ic_cuda_load_width(width, b->data, ndim, b_strides);
    return ic_cuda_run_check(cuda, dev, &dev->compare, numel, stream, &args, ret, err, err_size);
}

/* The kernel parameters of a pattern check or fill of `view` against `ref`. */
static int ic_cuda_pattern_args(const struct ic_view *view, const struct ic_pattern_ref *ref,
                                struct ic_verify_pattern_args *args, char *err, size_t err_size)
{
    if (ref->ndim != view->ndim || ref->ndim < 0 || ref->ndim > IC_MAX_NDIM) {
        snprintf(err, err_size, "the pattern has %d dimensions, the view %d (at most %d)",
                 ref->ndim, view->ndim, IC_MAX_NDIM);
        return IC_EINVAL;
    }
    for (int d = 0; d < ref->ndim; d++) {
        if (ref->shape[d] != view->shape[d]) {
            snprintf(err, err_size, "the pattern and the view differ in extent %d", d);
            return IC_EINVAL;
        }
    }
    if (ref->itemsize != view->itemsize || ref->itemsize < 1 || ref->itemsize > 16 ||
        ref->value_class < IC_LOGIC_BOOL || ref->value_class > IC_LOGIC_LAST) {
        snprintf(err, err_size,
                 "the pattern (value class %d, %d bytes) does not fit the view's "
                 "%d-byte elements",
                 ref->value_class, ref->itemsize, view->itemsize);
        return IC_EINVAL;
    }
    int64_t numel;
    if (ic_view_numel(view, &numel) < 0) {
        snprintf(err, err_size, "the element count of the view overflows");
        return IC_ERANGE;
    }
    /* Every base index the view reaches must lie in the base. */
    int64_t lowest = ref->first, highest = ref->first;
    for (int d = 0; d < ref->ndim && numel > 0; d++) {
        int64_t reach;
        if (__builtin_mul_overflow(ref->element_strides[d], ref->shape[d] - 1, &reach) ||
            __builtin_add_overflow(reach < 0 ? lowest : highest, reach,
                                   reach < 0 ? &lowest : &highest)) {
            snprintf(err, err_size, "the pattern's element strides overflow");
            return IC_ERANGE;
        }
    }
    if (numel > 0 && (lowest < 0 || highest >= ref->base_count)) {
        snprintf(err, err_size,
                 "the view reaches base elements %lld to %lld, outside the base of %lld",
                 (long long)lowest, (long long)highest, (long long)ref->base_count);
        return IC_EINVAL;
    }
    int64_t shape[IC_MAX_NDIM], strides[IC_MAX_NDIM], element_strides[IC_MAX_NDIM];
    int ndim;
    int rc = ic_cuda_kernel_dims(ref->ndim, ref->shape, view->strides, ref->element_strides, shape,
                                 strides, element_strides, &ndim, err, err_size);
    if (rc < 0)
        return rc;
    *args = (struct ic_verify_pattern_args){
        .data = view->data,
        .seed = ref->seed,
        .numel = numel,
        .base_count = ref->base_count,
        .first = ref->first,
        .value_class = ref->value_class,
        .itemsize = ref->itemsize,
        .ndim = ndim,
    };
    memcpy(args->shape, shape, sizeof(args->shape));
    memcpy(args->strides, strides, sizeof(args->strides));
    memcpy(args->element_strides, element_strides, sizeof(args->element_strides));
    args->load_width = ic_cuda_load_width(ic_cuda_widest_word(ref->itemsize), view->data,
                                          args->ndim, args->strides);
    return 0;
}

static int ic_cuda_check_pattern_unscoped(struct ic_cuda *cuda, const struct ic_view *view,
                                          const struct ic_pattern_ref *ref, uintptr_t stream,
                                          struct ic_compare_result *ret, char *err, size_t err_size)
{
    struct ic_verify_pattern_args args;
    int rc = ic_cuda_pattern_args(view, ref, &args, err, err_size);
    struct ic_cuda_device *dev;
    if (rc == 0)
        rc = ic_cuda_prepare(cuda, stream, view, NULL, &dev, err, err_size);
    if (rc < 0)
        return rc;
    if (args.numel == 0) {
        *ret = (struct ic_compare_result){.compared = 0, .mismatches = 0, .first_mismatch = -1};
        return 0;
    }
    args.counters = dev->counters;
    return ic_cuda_run_check(cuda, dev, &dev->check_pattern, args.numel, stream, &args, ret, err,
                             err_size);
}

static int ic_cuda_fill_pattern_unscoped(struct ic_cuda *cuda, const struct ic_view *view,
                                         const struct ic_pattern_ref *ref, uintptr_t stream,
                                         char *err, size_t err_size)
{
    struct ic_verify_pattern_args args;
    int rc = ic_cuda_pattern_args(view, ref, &args, err, err_size);
    struct ic_cuda_device *dev;
    if (rc == 0)
        rc = ic_cuda_prepare(cuda, stream, view, NULL, &dev, err, err_size);
    if (rc < 0 || args.numel == 0)
        return rc;
    return ic_cuda_launch(cuda, &dev->fill_pattern, ic_cuda_blocks(&dev->fill_pattern, args.numel),
                          IC_VERIFY_BLOCK, stream, &args, err, err_size);
}

static int ic_cuda_spin_unscoped(struct ic_cuda *cuda, uintptr_t stream, uint64_t nanoseconds,
                                 char *err, size_t err_size)
{
    struct ic_cuda_device *dev;
    int rc = ic_cuda_prepare(cuda, stream, NULL, NULL, &dev, err, err_size);
    if (rc < 0)
        return rc;
    struct ic_verify_spin_args args = {.nanoseconds = nanoseconds};
    return ic_cuda_launch(cuda, &dev->spin, 1, 1, stream, &args, err, err_size);
}

/* --- Pointers --------------------------------------------------------------------------------- */

int ic_cuda_pointer_info(struct ic_cuda *cuda, uintptr_t pointer, struct ic_cuda_pointer *ret,
                         char *err, size_t err_size)
{
    int rc = ic_cuda_enter_any(cuda, err, err_size);
    if (rc < 0)
        return rc;
    unsigned int memory_type = 0;
    int ordinal = -1;
    CUdeviceptr range_start = 0;
    size_t range_size = 0;
    /* Documented as "a boolean" without a width: zeroed wide storage reads right whether the
     * driver writes 1, 4 or 8 bytes (little-endian). */
    uint64_t managed = 0;
    CUpointer_attribute attributes[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
    };
    void *values[] = {&memory_type, &ordinal, &range_start, &range_size, &managed};
    rc = IC_CUDA_CALL(cuda, err, err_size, cuPointerGetAttributes,
                      (unsigned int)(sizeof(attributes) / sizeof(attributes[0])), attributes,
                      values, (CUdeviceptr)pointer);
    if (rc < 0)
        return rc;
    struct ic_cuda_pointer info = {.memory = IC_CUDA_MEMORY_UNKNOWN, .device_ordinal = -1};
    if (managed != 0 || memory_type == CU_MEMORYTYPE_UNIFIED)
        info.memory = IC_CUDA_MEMORY_MANAGED;
    else if (memory_type == CU_MEMORYTYPE_DEVICE)
        info.memory = IC_CUDA_MEMORY_DEVICE;
    else if (memory_type == CU_MEMORYTYPE_HOST)
        info.memory = IC_CUDA_MEMORY_HOST;
    if (info.memory != IC_CUDA_MEMORY_UNKNOWN) {
        info.device_ordinal = ordinal >= 0 ? ordinal : -1;
        info.range_start = (uintptr_t)range_start;
        info.range_size = range_size;
    }
    *ret = info;
    return 0;
}

static const char *ic_cuda_memory_text(enum ic_cuda_memory memory)
{
    switch (memory) {
    case IC_CUDA_MEMORY_HOST:
        return "page-locked host memory";
    case IC_CUDA_MEMORY_DEVICE:
        return "device memory";
    case IC_CUDA_MEMORY_MANAGED:
        return "managed memory";
    default:
        return "memory the CUDA driver does not know (plain host memory, or freed)";
    }
}

static int ic_cuda_check_view_unscoped(struct ic_cuda *cuda, const struct ic_view *view,
                                       enum ic_rule rule, struct ic_diag *diag, char *err,
                                       size_t err_size)
{
    enum ic_cuda_memory expected;
    const char *device_text;
    switch (view->device_type) {
    case IC_DEVICE_CUDA:
        expected = IC_CUDA_MEMORY_DEVICE;
        device_text = "kDLCUDA (device memory)";
        break;
    case IC_DEVICE_CUDA_HOST:
        expected = IC_CUDA_MEMORY_HOST;
        device_text = "kDLCUDAHost (page-locked host memory)";
        break;
    case IC_DEVICE_CUDA_MANAGED:
        expected = IC_CUDA_MEMORY_MANAGED;
        device_text = "kDLCUDAManaged (managed memory)";
        break;
    default:
        snprintf(err, err_size, "device type %d is not a CUDA device type", (int)view->device_type);
        return IC_EINVAL;
    }
    int64_t numel, lo, hi;
    if (ic_view_numel(view, &numel) < 0 || ic_view_span(view, &lo, &hi) < 0) {
        ic_diag_error(diag, rule, "the view's extent overflows, so no allocation can hold it");
        return 0;
    }
    if (numel == 0)
        return 0; /* addresses nothing: no pointer to check */
    struct ic_cuda_pointer info;
    int rc = ic_cuda_pointer_info(cuda, view->data, &info, err, err_size);
    if (rc < 0)
        return rc;
    unsigned long long data = view->data;
    if (info.memory != expected) {
        /* Managed memory is readable by every device: exporting it as device memory, as CuPy
         * does for old consumers (CUPY_DLPACK_EXPORT_VERSION), misstates the type but does not
         * break a consumer. */
        bool harmless = expected == IC_CUDA_MEMORY_DEVICE && info.memory == IC_CUDA_MEMORY_MANAGED;
        ic_diag_add(diag, harmless ? IC_SEV_WARNING : IC_SEV_ERROR, rule,
                    "data %#llx is %s, but the device type says %s", data,
                    ic_cuda_memory_text(info.memory), device_text);
    }
    if (info.memory == IC_CUDA_MEMORY_UNKNOWN)
        return 0; /* no device, no allocation to compare with */
    /* Only device memory belongs to one device; pinned and managed memory serve them all. */
    if (view->device_type == IC_DEVICE_CUDA && info.memory == IC_CUDA_MEMORY_DEVICE &&
        view->device_id >= 0 && info.device_ordinal != view->device_id)
        ic_diag_error(diag, rule,
                      "data %#llx lives on CUDA device %d, but the view says device %lld", data,
                      info.device_ordinal, (long long)view->device_id);
    if (info.range_size == 0) {
        ic_diag_warn(diag, rule,
                     "the driver reports no allocation range for %#llx, so the span is unchecked",
                     data);
        return 0;
    }
    /* [data + lo, data + hi) must lie in [range_start, range_start + range_size); compared as
     * distances from range_start so that nothing wraps. */
    unsigned long long start = info.range_start, end = start + info.range_size;
    bool inside = data >= start && data < end &&
                  (lo >= 0 || (unsigned long long)-lo <= data - start) &&
                  (unsigned long long)hi <= end - data;
    if (!inside)
        ic_diag_error(diag, rule,
                      "the view addresses [%#llx, %#llx), outside its allocation [%#llx, %#llx)",
                      data + (unsigned long long)lo, data + (unsigned long long)hi, start, end);
    return 0;
}

/* --- Streams, copies, memory ------------------------------------------------------------------ */

static int ic_cuda_stream_create_unscoped(struct ic_cuda *cuda, int device_ordinal, uintptr_t *ret,
                                          char *err, size_t err_size)
{
    struct ic_cuda_device *dev;
    int rc = ic_cuda_enter(cuda, device_ordinal, &dev, err, err_size);
    if (rc < 0)
        return rc;
    /* Non-blocking: the stream does not wait for the legacy default stream, so a producer
     * that writes on stream 0 and skips the hand-over is seen, not rescued by the implicit
     * synchronisation of blocking streams. */
    CUstream stream;
    rc = IC_CUDA_CALL(cuda, err, err_size, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    if (rc == 0)
        *ret = (uintptr_t)stream;
    return rc;
}

static int ic_cuda_stream_destroy_unscoped(struct ic_cuda *cuda, uintptr_t stream)
{
    char err[256];
    if (cuda->state != IC_CUDA_READY || ic_cuda_is_default_stream(stream))
        return IC_EINVAL;
    return IC_CUDA_CALL(cuda, err, sizeof(err), cuStreamDestroy, (CUstream)stream);
}

static int ic_cuda_stream_synchronize_unscoped(struct ic_cuda *cuda, uintptr_t stream, char *err,
                                               size_t err_size)
{
    int rc = ic_cuda_enter_any(cuda, err, err_size);
    if (rc < 0)
        return rc;
    return IC_CUDA_CALL(cuda, err, err_size, cuStreamSynchronize, (CUstream)stream);
}

static int ic_cuda_stream_wait_unscoped(struct ic_cuda *cuda, uintptr_t waiting, uintptr_t producer,
                                        char *err, size_t err_size)
{
    int rc = ic_cuda_require_ready(cuda, err, err_size);
    int ordinal;
    if (rc == 0)
        rc = ic_cuda_stream_device(cuda, producer, ic_cuda_default_device(cuda), &ordinal, err,
                                   err_size);
    struct ic_cuda_device *dev;
    if (rc == 0)
        rc = ic_cuda_enter(cuda, ordinal, &dev, err, err_size);
    if (rc < 0)
        return rc;
    /* An event records the producer's queue as it is now; the wait holds after the event is
     * destroyed, which the driver defers until the event completes. */
    CUevent event;
    rc = IC_CUDA_CALL(cuda, err, err_size, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
    if (rc < 0)
        return rc;
    rc = IC_CUDA_CALL(cuda, err, err_size, cuEventRecord, event, (CUstream)producer);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuStreamWaitEvent, (CUstream)waiting, event, 0);
    char destroy_err[256];
    int destroyed = IC_CUDA_CALL(cuda, destroy_err, sizeof(destroy_err), cuEventDestroy, event);
    if (rc == 0 && destroyed < 0) {
        snprintf(err, err_size, "%s", destroy_err);
        rc = destroyed;
    }
    return rc;
}

static int ic_cuda_copy_to_host_unscoped(struct ic_cuda *cuda, void *dst, uintptr_t src,
                                         size_t size, char *err, size_t err_size)
{
    int rc = ic_cuda_enter_any(cuda, err, err_size);
    if (rc < 0 || size == 0)
        return rc;
    return IC_CUDA_CALL(cuda, err, err_size, cuMemcpyDtoH, dst, (CUdeviceptr)src, size);
}

static int ic_cuda_copy_to_device_unscoped(struct ic_cuda *cuda, uintptr_t dst, const void *src,
                                           size_t size, char *err, size_t err_size)
{
    int rc = ic_cuda_enter_any(cuda, err, err_size);
    if (rc < 0 || size == 0)
        return rc;
    return IC_CUDA_CALL(cuda, err, err_size, cuMemcpyHtoD, (CUdeviceptr)dst, src, size);
}

static int ic_cuda_alloc_unscoped(struct ic_cuda *cuda, int device_ordinal, size_t size,
                                  uintptr_t *ret, char *err, size_t err_size)
{
    struct ic_cuda_device *dev;
    int rc = ic_cuda_enter(cuda, device_ordinal, &dev, err, err_size);
    if (rc < 0)
        return rc;
    CUdeviceptr pointer;
    rc = IC_CUDA_CALL(cuda, err, err_size, cuMemAlloc, &pointer, size);
    if (rc == 0)
        *ret = (uintptr_t)pointer;
    return rc;
}

static int ic_cuda_free_unscoped(struct ic_cuda *cuda, uintptr_t pointer)
{
    char err[256];
    int rc = ic_cuda_enter_any(cuda, err, sizeof(err));
    if (rc < 0 || pointer == 0)
        return rc;
    return IC_CUDA_CALL(cuda, err, sizeof(err), cuMemFree, (CUdeviceptr)pointer);
}

int ic_cuda_memory_bandwidth(struct ic_cuda *cuda, int device_ordinal, double *ret_bytes_per_second,
                             char *err, size_t err_size)
{
    struct ic_cuda_device *dev;
    int rc = ic_cuda_enter(cuda, device_ordinal, &dev, err, err_size);
    int clock_khz = 0, bus_bits = 0;
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuDeviceGetAttribute, &clock_khz,
                          CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev->device);
    if (rc == 0)
        rc = IC_CUDA_CALL(cuda, err, err_size, cuDeviceGetAttribute, &bus_bits,
                          CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev->device);
    if (rc < 0)
        return rc;
    if (clock_khz <= 0 || bus_bits <= 0) {
        snprintf(err, err_size, "device %d reports no memory clock or bus width", device_ordinal);
        return IC_EUNSUPPORTED;
    }
    /* Two transfers per clock (double data rate), bus_bits / 8 bytes each. */
    *ret_bytes_per_second = 2.0 * clock_khz * 1000.0 * (bus_bits / 8.0);
    return 0;
}

/* The entry points run their _unscoped body with the calling thread's current context saved
 * and put back, so that a library's own context is never left changed by ours. */
#define IC_CUDA_SCOPED(call)                                                                       \
    do {                                                                                           \
        CUcontext saved_ = ic_cuda_save_context(cuda);                                             \
        int rc_ = (call);                                                                          \
        ic_cuda_restore_context(cuda, saved_);                                                     \
        return rc_;                                                                                \
    } while (0)

/* --- The caller's context is left as it was -----------------------------------------------
 * The array libraries keep their own current device and context; a check that switched the
 * thread to another device's context and left it there would change where the next
 * library allocation lands. Every public entry point that may switch contexts restores the
 * caller's. */

int ic_cuda_compare(struct ic_cuda *cuda, const struct ic_view *a, const struct ic_view *b,
                    uintptr_t stream, struct ic_compare_result *ret, char *err, size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_compare_unscoped(cuda, a, b, stream, ret, err, err_size));
}

int ic_cuda_check_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                          const struct ic_pattern_ref *ref, uintptr_t stream,
                          struct ic_compare_result *ret, char *err, size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_check_pattern_unscoped(cuda, view, ref, stream, ret, err, err_size));
}

int ic_cuda_fill_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                         const struct ic_pattern_ref *ref, uintptr_t stream, char *err,
                         size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_fill_pattern_unscoped(cuda, view, ref, stream, err, err_size));
}

int ic_cuda_spin(struct ic_cuda *cuda, uintptr_t stream, uint64_t nanoseconds, char *err,
                 size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_spin_unscoped(cuda, stream, nanoseconds, err, err_size));
}

int ic_cuda_stream_create(struct ic_cuda *cuda, int device_ordinal, uintptr_t *ret, char *err,
                          size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_stream_create_unscoped(cuda, device_ordinal, ret, err, err_size));
}

int ic_cuda_stream_destroy(struct ic_cuda *cuda, uintptr_t stream)
{
    IC_CUDA_SCOPED(ic_cuda_stream_destroy_unscoped(cuda, stream));
}

int ic_cuda_stream_synchronize(struct ic_cuda *cuda, uintptr_t stream, char *err, size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_stream_synchronize_unscoped(cuda, stream, err, err_size));
}

int ic_cuda_stream_wait(struct ic_cuda *cuda, uintptr_t waiting, uintptr_t producer, char *err,
                        size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_stream_wait_unscoped(cuda, waiting, producer, err, err_size));
}

int ic_cuda_copy_to_host(struct ic_cuda *cuda, void *dst, uintptr_t src, size_t size, char *err,
                         size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_copy_to_host_unscoped(cuda, dst, src, size, err, err_size));
}

int ic_cuda_copy_to_device(struct ic_cuda *cuda, uintptr_t dst, const void *src, size_t size,
                           char *err, size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_copy_to_device_unscoped(cuda, dst, src, size, err, err_size));
}

int ic_cuda_alloc(struct ic_cuda *cuda, int device_ordinal, size_t size, uintptr_t *ret, char *err,
                  size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_alloc_unscoped(cuda, device_ordinal, size, ret, err, err_size));
}

int ic_cuda_free(struct ic_cuda *cuda, uintptr_t pointer)
{
    IC_CUDA_SCOPED(ic_cuda_free_unscoped(cuda, pointer));
}

int ic_cuda_check_view(struct ic_cuda *cuda, const struct ic_view *view, enum ic_rule rule,
                       struct ic_diag *diag, char *err, size_t err_size)
{
    IC_CUDA_SCOPED(ic_cuda_check_view_unscoped(cuda, view, rule, diag, err, err_size));
}
