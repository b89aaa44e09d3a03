/* Unit tests of ic_cuda (src/gpu/ic_cuda.c), the real module, driven against the host-memory
 * stand-in of the CUDA driver (tests/cuda_standin/), which meson names in IC_CUDA_LIBRARY.
 * The test opens the same library itself for the stand-in's icsi_ hooks and for the few
 * driver calls that ic_cuda.h does not offer (page-locked and managed allocations, events);
 * dlopen of the same file gives the same instance, so both see one driver state.
 *
 * Without GPU support (no nvcc at configure time) there is no stand-in: the test checks the
 * disabled module and reports every GPU check as skipped. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ic_config.h"
#include "ic_cuda.h"
#include "ic_diag.h"
#include "ic_error.h"
#include "ic_pattern.h"
#include "ic_view.h"
#include "tap.h"

#if !IC_HAVE_CUDA

/* What the enabled build checks, reported here as skipped so that the count stays stable. */
#define GPU_GROUPS(X)                                                                              \
    X("driver states: no driver, missing entry points, cuInit failures, no device, ready")         \
    X("pointer checks: memory type, device ordinal, span inside the allocation")                   \
    X("kernels: strided compare, pattern check and fill against the host")                         \
    X("stream ordering: queued work, event waits, the legacy default stream")

int main(void)
{
    struct ic_cuda *cuda = NULL;
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_DISABLED,
           "a build without GPU support opens a disabled handle");
    TAP_OK(strstr(ic_cuda_reason(cuda), "install the CUDA toolkit") &&
               strstr(ic_cuda_reason(cuda), "-Dcuda=enabled"),
           "the reason says how to enable GPU support: %s", ic_cuda_reason(cuda));
    char err[512] = "";
    struct ic_compare_result res;
    struct ic_view v = {.device_type = IC_DEVICE_CUDA, .itemsize = 4, .ndim = 0};
    TAP_OK(ic_cuda_compare(cuda, &v, &v, 0, &res, err, sizeof(err)) == IC_EUNSUPPORTED &&
               strstr(err, "-Dcuda=enabled"),
           "GPU work is IC_EUNSUPPORTED with the reason");
    TAP_OK(!ic_cuda_built_with_kernels(), "no kernels are embedded");
    ic_cuda_close(cuda);
#define SKIP_GROUP(what) TAP_SKIP(what, "built without GPU support (" IC_CUDA_OFF_REASON ")");
    GPU_GROUPS(SKIP_GROUP)
#undef SKIP_GROUP
    return tap_done();
}

#else

#include <dlfcn.h>

#include <cuda.h>

#include "../cuda_standin/ic_cuda_standin.h"

/* --- The stand-in, opened by the test --------------------------------------------------------- */

/* Hooks and driver calls the test makes itself, typed from their declarations; the names go
 * through cuda.h's #defines like ic_cuda.c's (cuMemAllocHost is cuMemAllocHost_v2). */
#define STANDIN_CALLS(X)                                                                           \
    X(icsi_reset)                                                                                  \
    X(icsi_set_device_count)                                                                       \
    X(icsi_set_init_result)                                                                        \
    X(icsi_register_range)                                                                         \
    X(icsi_unregister_range)                                                                       \
    X(icsi_pending)                                                                                \
    X(icsi_kernels_run)                                                                            \
    X(icsi_fail_next_module_load)                                                                  \
    X(cuMemAllocHost)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemAllocManaged)                                                                           \
    X(cuMemFree)                                                                                   \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuEventCreate)                                                                               \
    X(cuEventRecord)                                                                               \
    X(cuEventSynchronize)                                                                          \
    X(cuEventDestroy)                                                                              \
    X(cuCtxSynchronize)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)

static struct {
#define STANDIN_FIELD(name) __typeof__(&name) name;
    STANDIN_CALLS(STANDIN_FIELD)
#undef STANDIN_FIELD
} si;

#define STRINGIFY(text)   #text
#define SYMBOL_NAME(name) STRINGIFY(name)

static bool load_standin(const char *path)
{
    void *library = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!library)
        return false;
    bool complete = true;
#define STANDIN_LOAD(name)                                                                         \
    {                                                                                              \
        void *address = dlsym(library, SYMBOL_NAME(name));                                         \
        complete = complete && address;                                                            \
        memcpy(&si.name, &address, sizeof(address));                                               \
    }
    STANDIN_CALLS(STANDIN_LOAD)
#undef STANDIN_LOAD
    return complete;
}

/* Makes device `ordinal`'s primary context current, as an array library would before its
 * own calls; the direct stand-in calls of these tests need one. */
static CUcontext make_current(int ordinal)
{
    CUdevice device;
    CUcontext context = NULL;
    if (si.cuDeviceGet(&device, ordinal) != CUDA_SUCCESS ||
        si.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
        si.cuCtxSetCurrent(context) != CUDA_SUCCESS)
        return NULL;
    return context;
}

/* A fresh stand-in and a handle opened on it, with device 0 current like a library's. */
static struct ic_cuda *open_fresh(void)
{
    si.icsi_reset();
    struct ic_cuda *cuda = NULL;
    if (ic_cuda_open(&cuda) < 0)
        return NULL;
    if (ic_cuda_state(cuda) == IC_CUDA_READY)
        make_current(0);
    return cuda;
}

static bool contains(const char *text, const char *part)
{
    return text && strstr(text, part) != NULL;
}

/* --- Driver states ---------------------------------------------------------------------------- */

static void test_states(const char *standin, const char *broken)
{
    struct ic_cuda *cuda;
    const char *missing = "/nonexistent/interopcheck/libcuda-missing.so.1";
    setenv("IC_CUDA_LIBRARY", missing, 1);
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_NO_DRIVER &&
               contains(ic_cuda_reason(cuda), missing),
           "a missing driver library is NO_DRIVER, naming the path: %s", ic_cuda_reason(cuda));
    char err[1024] = "";
    struct ic_compare_result res;
    struct ic_view v = {.device_type = IC_DEVICE_CUDA, .itemsize = 4, .ndim = 0};
    TAP_OK(ic_cuda_compare(cuda, &v, &v, 0, &res, err, sizeof(err)) == IC_EUNSUPPORTED &&
               contains(err, missing),
           "GPU work without a driver is IC_EUNSUPPORTED with the reason");
    ic_cuda_close(cuda);

    setenv("IC_CUDA_LIBRARY", broken, 1);
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_BROKEN &&
               contains(ic_cuda_reason(cuda), "2 entry points") &&
               contains(ic_cuda_reason(cuda), "cuLaunchKernel") &&
               contains(ic_cuda_reason(cuda), "cuMemFree_v2"),
           "a driver without two entry points is BROKEN, naming both symbols: %s",
           ic_cuda_reason(cuda));
    ic_cuda_close(cuda);
    setenv("IC_CUDA_LIBRARY", standin, 1);

    si.icsi_reset();
    si.icsi_set_init_result(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_BROKEN &&
               contains(ic_cuda_reason(cuda), "cuInit") &&
               contains(ic_cuda_reason(cuda), "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
           "a failing cuInit is BROKEN with the call and the driver's error name: %s",
           ic_cuda_reason(cuda));
    ic_cuda_close(cuda);

    si.icsi_reset();
    si.icsi_set_init_result(CUDA_ERROR_NO_DEVICE);
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_NO_DEVICE,
           "cuInit's CUDA_ERROR_NO_DEVICE is NO_DEVICE: %s", ic_cuda_reason(cuda));
    ic_cuda_close(cuda);

    si.icsi_reset();
    si.icsi_set_device_count(0);
    TAP_OK(ic_cuda_open(&cuda) == 0 && ic_cuda_state(cuda) == IC_CUDA_NO_DEVICE &&
               ic_cuda_device_count(cuda) == 0,
           "a driver that counts no device is NO_DEVICE: %s", ic_cuda_reason(cuda));
    ic_cuda_close(cuda);

    cuda = open_fresh();
    TAP_OK(cuda && ic_cuda_state(cuda) == IC_CUDA_READY && ic_cuda_device_count(cuda) == 2 &&
               ic_cuda_driver_version(cuda) == 13000,
           "the stand-in is READY with 2 devices and driver version 13000");
    TAP_OK(cuda && contains(ic_cuda_reason(cuda), "CUDA driver 13.0") &&
               contains(ic_cuda_reason(cuda), "stand-in GPU 1 (sm_90)"),
           "the reason names the driver and the devices: %s", cuda ? ic_cuda_reason(cuda) : "");
    ic_cuda_close(cuda);
    TAP_OK(ic_cuda_built_with_kernels() && contains(ic_cuda_kernel_architectures(), "sm_") &&
               contains(ic_cuda_kernel_architectures(), "+ compute_"),
           "the kernels are embedded for %s", ic_cuda_kernel_architectures());
}

/* --- Pointer checks --------------------------------------------------------------------------- */

static struct ic_view view_1d(uintptr_t data, int32_t device_type, int64_t device_id, int itemsize,
                              int64_t n, int64_t stride)
{
    struct ic_view v = {.data = data,
                        .device_type = device_type,
                        .device_id = device_id,
                        .itemsize = itemsize,
                        .ndim = 1,
                        .shape = {n},
                        .strides = {stride}};
    return v;
}

/* Runs ic_cuda_check_view; returns the errors found (-1 when the check failed to run) and the
 * first message in `message`. */
static int check(struct ic_cuda *cuda, const struct ic_view *v, struct ic_diag *diag)
{
    char err[512];
    ic_diag_init(diag);
    if (ic_cuda_check_view(cuda, v, IC_RULE_DLPACK_DEVICE, diag, err, sizeof(err)) < 0)
        return -1;
    return diag->errors;
}

static const char *first_message(const struct ic_diag *diag)
{
    return diag->count ? diag->items[0].message : "(no finding)";
}

static void test_pointers(struct ic_cuda *cuda)
{
    char err[512] = "";
    struct ic_diag diag;
    struct ic_cuda_pointer info;
    uintptr_t dev0 = 0, dev1 = 0;
    TAP_OK(ic_cuda_alloc(cuda, 0, 4096, &dev0, err, sizeof(err)) == 0 &&
               ic_cuda_alloc(cuda, 1, 64, &dev1, err, sizeof(err)) == 0,
           "allocations on devices 0 and 1 %s", err);
    TAP_OK(ic_cuda_pointer_info(cuda, dev0 + 100, &info, err, sizeof(err)) == 0 &&
               info.memory == IC_CUDA_MEMORY_DEVICE && info.device_ordinal == 0 &&
               info.range_start == dev0 && info.range_size == 4096,
           "an interior pointer is device memory of device 0 in [start, start + 4096)");
    TAP_OK(ic_cuda_pointer_info(cuda, dev1, &info, err, sizeof(err)) == 0 &&
               info.memory == IC_CUDA_MEMORY_DEVICE && info.device_ordinal == 1,
           "the second allocation is on device 1");

    struct ic_view v = view_1d(dev0, IC_DEVICE_CUDA, 0, 4, 1024, 4);
    TAP_OK(check(cuda, &v, &diag) == 0 && diag.count == 0,
           "a view of the whole allocation on the right device passes");
    CUcontext mine = make_current(0), before = NULL, after = NULL;
    si.cuCtxGetCurrent(&before);
    struct ic_view on1 = view_1d(dev1, IC_DEVICE_CUDA, 1, 4, 16, 4);
    struct ic_compare_result same;
    bool compared = ic_cuda_compare(cuda, &on1, &on1, 0, &same, err, sizeof(err)) == 0;
    si.cuCtxGetCurrent(&after);
    TAP_OK(compared && mine && before == mine && after == before,
           "work on device 1 leaves the caller's device-0 context current %s", err);
    v.device_id = 1;
    TAP_OK(check(cuda, &v, &diag) == 1 && ic_diag_has_rule(&diag, IC_RULE_DLPACK_DEVICE) &&
               contains(first_message(&diag), "lives on CUDA device 0") &&
               contains(first_message(&diag), "device 1"),
           "the wrong device id is an error citing the rule: %s", first_message(&diag));
    v = view_1d(dev0, IC_DEVICE_CUDA, 0, 4, 1025, 4);
    TAP_OK(check(cuda, &v, &diag) == 1 && contains(first_message(&diag), "outside its allocation"),
           "one element past the end is outside the allocation: %s", first_message(&diag));
    v = view_1d(dev0 + 4092, IC_DEVICE_CUDA, 0, 4, 1, 4);
    TAP_OK(check(cuda, &v, &diag) == 0, "the last 4 bytes of the allocation pass");
    v.data = dev0 + 4093;
    TAP_OK(check(cuda, &v, &diag) == 1, "4 bytes from 3 before the end do not");
    v = view_1d(dev0 + 40, IC_DEVICE_CUDA, 0, 4, 11, -4);
    TAP_OK(check(cuda, &v, &diag) == 0, "a reversed view reaching back to the start passes");
    v.shape[0] = 12;
    TAP_OK(check(cuda, &v, &diag) == 1, "one more element reaches before the allocation");
    v = view_1d(dev0 + 400, IC_DEVICE_CUDA, 0, 4, 100, 4);
    TAP_OK(check(cuda, &v, &diag) == 0, "a slice inside the allocation passes");
    v = view_1d(0, IC_DEVICE_CUDA, 0, 4, 0, 4);
    TAP_OK(check(cuda, &v, &diag) == 0 && diag.count == 0, "an empty view addresses nothing");

    int32_t *plain = calloc(64, sizeof(int32_t));
    TAP_OK(ic_cuda_pointer_info(cuda, (uintptr_t)plain, &info, err, sizeof(err)) == 0 &&
               info.memory == IC_CUDA_MEMORY_UNKNOWN && info.device_ordinal == -1 &&
               info.range_start == 0,
           "plain host memory is unknown to the driver");
    v = view_1d((uintptr_t)plain, IC_DEVICE_CUDA, 0, 4, 64, 4);
    TAP_OK(check(cuda, &v, &diag) == 1 && contains(first_message(&diag), "does not know"),
           "plain host memory claimed as device memory is an error: %s", first_message(&diag));

    /* a misbehaving producer: host memory the driver was told is device memory of device 1 */
    TAP_OK(si.icsi_register_range(plain, 64 * sizeof(int32_t), ICSI_DEVICE, 1) == 0,
           "host memory registered as device memory of device 1");
    v.device_id = 1;
    TAP_OK(check(cuda, &v, &diag) == 0, "that view passes as device 1's");
    v.device_id = 0;
    TAP_OK(check(cuda, &v, &diag) == 1, "and fails as device 0's");
    si.icsi_unregister_range(plain);
    free(plain);

    void *pinned = NULL;
    CUdeviceptr managed = 0;
    TAP_OK(si.cuMemAllocHost(&pinned, 256) == CUDA_SUCCESS &&
               si.cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS,
           "page-locked and managed allocations");
    TAP_OK(ic_cuda_pointer_info(cuda, (uintptr_t)pinned, &info, err, sizeof(err)) == 0 &&
               info.memory == IC_CUDA_MEMORY_HOST,
           "page-locked memory is typed HOST");
    TAP_OK(ic_cuda_pointer_info(cuda, (uintptr_t)managed, &info, err, sizeof(err)) == 0 &&
               info.memory == IC_CUDA_MEMORY_MANAGED,
           "managed memory is typed MANAGED (from the one-byte IS_MANAGED)");
    v = view_1d((uintptr_t)pinned, IC_DEVICE_CUDA_HOST, 0, 4, 64, 4);
    TAP_OK(check(cuda, &v, &diag) == 0 && diag.count == 0, "kDLCUDAHost over pinned memory passes");
    v.device_type = IC_DEVICE_CUDA;
    TAP_OK(check(cuda, &v, &diag) == 1 && contains(first_message(&diag), "page-locked"),
           "pinned memory claimed as device memory is an error: %s", first_message(&diag));
    v = view_1d((uintptr_t)managed, IC_DEVICE_CUDA_MANAGED, 0, 4, 64, 4);
    TAP_OK(check(cuda, &v, &diag) == 0 && diag.count == 0,
           "kDLCUDAManaged over managed memory passes");
    v.device_type = IC_DEVICE_CUDA;
    TAP_OK(check(cuda, &v, &diag) == 0 && diag.count == 1 &&
               diag.items[0].severity == IC_SEV_WARNING,
           "managed memory exported as device memory is a warning only");
    v.device_type = IC_DEVICE_CUDA_HOST;
    TAP_OK(check(cuda, &v, &diag) == 1, "managed memory claimed as pinned memory is an error");
    v.device_type = IC_DEVICE_CPU;
    TAP_OK(ic_cuda_check_view(cuda, &v, IC_RULE_DLPACK_DEVICE, &diag, err, sizeof(err)) ==
               IC_EINVAL,
           "a CPU view is not the driver's to check");
    si.cuMemFreeHost(pinned);
    si.cuMemFree(managed);
    ic_cuda_free(cuda, dev0);
    ic_cuda_free(cuda, dev1);
}

/* --- Kernels ---------------------------------------------------------------------------------- */

static uintptr_t upload(struct ic_cuda *cuda, const void *data, size_t size)
{
    char err[256];
    uintptr_t dev = 0;
    if (ic_cuda_alloc(cuda, 0, size, &dev, err, sizeof(err)) < 0 ||
        ic_cuda_copy_to_device(cuda, dev, data, size, err, sizeof(err)) < 0)
        return 0;
    return dev;
}

/* The view `host` of a host buffer, moved onto the copy of that buffer at `dev`. */
static struct ic_view on_device(struct ic_view host, const void *host_base, uintptr_t dev)
{
    host.data = dev + (host.data - (uintptr_t)host_base);
    host.device_type = IC_DEVICE_CUDA;
    host.device_id = 0;
    return host;
}

/* Compares the device copies of two host views with ic_cuda_compare and the host views with
 * ic_view_compare; true when both ran and agree. The GPU result goes to `ret`. */
static bool gpu_agrees(struct ic_cuda *cuda, const struct ic_view *a, const void *a_base,
                       size_t a_size, const struct ic_view *b, const void *b_base, size_t b_size,
                       struct ic_compare_result *ret)
{
    char err[512];
    uintptr_t da = upload(cuda, a_base, a_size), db = upload(cuda, b_base, b_size);
    struct ic_view va = on_device(*a, a_base, da), vb = on_device(*b, b_base, db);
    struct ic_compare_result host;
    bool ok = da && db && ic_view_compare(a, b, &host) == 0 &&
              ic_cuda_compare(cuda, &va, &vb, 0, ret, err, sizeof(err)) == 0 &&
              ret->compared == host.compared && ret->mismatches == host.mismatches &&
              ret->first_mismatch == host.first_mismatch;
    if (!ok)
        TAP_DIAG("gpu compare: %s", err);
    ic_cuda_free(cuda, da);
    ic_cuda_free(cuda, db);
    return ok;
}

static void test_compare(struct ic_cuda *cuda)
{
    struct ic_compare_result res;
    int32_t a[1000], b[1000];
    for (int i = 0; i < 1000; i++)
        a[i] = b[i] = (int32_t)((uint32_t)i * 2654435761u + 11);
    struct ic_view va = view_1d((uintptr_t)a, IC_DEVICE_CPU, 0, 4, 1000, 4);
    struct ic_view vb = view_1d((uintptr_t)b, IC_DEVICE_CPU, 0, 4, 1000, 4);
    unsigned long launched = si.icsi_kernels_run();
    TAP_OK(gpu_agrees(cuda, &va, a, sizeof(a), &vb, b, sizeof(b), &res) && res.mismatches == 0 &&
               res.compared == 1000,
           "equal contiguous buffers compare equal on the GPU");
    TAP_OK(si.icsi_kernels_run() == launched + 1, "through one kernel launch");
    b[300] = 0, b[7] ^= 1 << 20;
    TAP_OK(gpu_agrees(cuda, &va, a, sizeof(a), &vb, b, sizeof(b), &res) && res.mismatches == 2 &&
               res.first_mismatch == 7,
           "two changes: 2 mismatches, the first at 7");

    /* every third element against a contiguous copy of those elements */
    int32_t thirds[333];
    for (int i = 0; i < 333; i++)
        thirds[i] = a[3 * i];
    struct ic_view strided = view_1d((uintptr_t)a, IC_DEVICE_CPU, 0, 4, 333, 12);
    struct ic_view packed = view_1d((uintptr_t)thirds, IC_DEVICE_CPU, 0, 4, 333, 4);
    thirds[100] = -5;
    TAP_OK(gpu_agrees(cuda, &strided, a, sizeof(a), &packed, thirds, sizeof(thirds), &res) &&
               res.mismatches == 1 && res.first_mismatch == 100,
           "a stride-3 view against its packed copy: index 100 differs");

    /* reversed, and broadcast with a zero stride, both 2-D so that nothing merges */
    int16_t grid[6][8], flipped[6][8];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 8; j++)
            grid[i][j] = (int16_t)(i * 100 + j), flipped[5 - i][7 - j] = grid[i][j];
    struct ic_view rev = {.data = (uintptr_t)&flipped[5][7],
                          .itemsize = 2,
                          .ndim = 2,
                          .shape = {6, 8},
                          .strides = {-16, -2}};
    struct ic_view fwd = {
        .data = (uintptr_t)grid, .itemsize = 2, .ndim = 2, .shape = {6, 8}, .strides = {16, 2}};
    TAP_OK(gpu_agrees(cuda, &rev, flipped, sizeof(flipped), &fwd, grid, sizeof(grid), &res) &&
               res.mismatches == 0,
           "a doubly reversed view equals the original");
    grid[4][1] = 7;
    TAP_OK(gpu_agrees(cuda, &rev, flipped, sizeof(flipped), &fwd, grid, sizeof(grid), &res) &&
               res.mismatches == 1 && res.first_mismatch == 33,
           "a change at [4,1] is found at linear index 33");
    struct ic_view row = {
        .data = (uintptr_t)grid[2], .itemsize = 2, .ndim = 2, .shape = {6, 8}, .strides = {0, 2}};
    TAP_OK(gpu_agrees(cuda, &row, grid, sizeof(grid), &fwd, grid, sizeof(grid), &res) &&
               res.mismatches == 40 && res.first_mismatch == 0,
           "row 2 broadcast over 6 rows differs from the grid in the 5 other rows");

    /* a transposed view: the dimensions cannot merge */
    struct ic_view transposed = {
        .data = (uintptr_t)grid, .itemsize = 2, .ndim = 2, .shape = {8, 6}, .strides = {2, 16}};
    int16_t copy_t[8][6];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++)
            copy_t[i][j] = grid[j][i];
    struct ic_view packed_t = {
        .data = (uintptr_t)copy_t, .itemsize = 2, .ndim = 2, .shape = {8, 6}, .strides = {12, 2}};
    copy_t[5][3] = -1;
    TAP_OK(gpu_agrees(cuda, &transposed, grid, sizeof(grid), &packed_t, copy_t, sizeof(copy_t),
                      &res) &&
               res.mismatches == 1 && res.first_mismatch == 33,
           "a transposed view against its C-order copy: index 33 differs");

    /* bools as truth values; 24-byte raw elements compared in chunks */
    unsigned char b1[4] = {1, 0, 2, 1}, b2[4] = {2, 0, 1, 0};
    struct ic_view vb1 = view_1d((uintptr_t)b1, IC_DEVICE_CPU, 0, 1, 4, 1);
    struct ic_view vb2 = view_1d((uintptr_t)b2, IC_DEVICE_CPU, 0, 1, 4, 1);
    vb1.dtype = vb2.dtype = IC_DTYPE_BOOL;
    TAP_OK(gpu_agrees(cuda, &vb1, b1, 4, &vb2, b2, 4, &res) && res.mismatches == 1 &&
               res.first_mismatch == 3,
           "bools compare as truth values: only index 3 differs");
    unsigned char w1[5 * 24], w2[5 * 24];
    for (int i = 0; i < 5 * 24; i++)
        w1[i] = w2[i] = (unsigned char)(i * 31);
    w2[3 * 24 + 17] ^= 2;
    struct ic_view vw1 = view_1d((uintptr_t)w1, IC_DEVICE_CPU, 0, 24, 5, 24);
    struct ic_view vw2 = view_1d((uintptr_t)w2, IC_DEVICE_CPU, 0, 24, 5, 24);
    TAP_OK(gpu_agrees(cuda, &vw1, w1, sizeof(w1), &vw2, w2, sizeof(w2), &res) &&
               res.mismatches == 1 && res.first_mismatch == 3,
           "24-byte elements: byte 17 of element 3 differs");

    /* dimensions: 10 that merge into one run; 9 that cannot merge are too many */
    char err[512] = "";
    uintptr_t d1 = upload(cuda, a, sizeof(a)), d2 = upload(cuda, a, sizeof(a));
    struct ic_view many = {.data = d1,
                           .device_type = IC_DEVICE_CUDA,
                           .itemsize = 1,
                           .ndim = 10,
                           .shape = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}};
    ic_view_set_c_strides(&many);
    struct ic_view many2 = many;
    many2.data = d2;
    TAP_OK(ic_cuda_compare(cuda, &many, &many2, 0, &res, err, sizeof(err)) == 0 &&
               res.compared == 1024 && res.mismatches == 0,
           "10 contiguous dimensions merge into one: %s", err);
    struct ic_view nine = many, nine_f = many2;
    nine.ndim = nine_f.ndim = 9;
    ic_view_set_c_strides(&nine);
    for (int d = 0; d < 9; d++)
        nine_f.strides[d] = (int64_t)1 << d; /* Fortran order */
    TAP_OK(ic_cuda_compare(cuda, &nine, &nine_f, 0, &res, err, sizeof(err)) == IC_EUNSUPPORTED,
           "9 dimensions that cannot merge are IC_EUNSUPPORTED: %s", err);
    nine_f.shape[8] = 3;
    TAP_OK(ic_cuda_compare(cuda, &nine, &nine_f, 0, &res, err, sizeof(err)) == IC_EINVAL,
           "views of different shapes are IC_EINVAL");
    ic_cuda_free(cuda, d1);
    ic_cuda_free(cuda, d2);
}

static struct ic_pattern_ref pattern_1d(enum ic_dtype dtype, uint64_t seed, int64_t count)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    struct ic_pattern_ref ref = {.seed = seed,
                                 .value_class = (int)info->value_class,
                                 .itemsize = info->itemsize,
                                 .base_count = count,
                                 .ndim = 1,
                                 .shape = {count},
                                 .element_strides = {1}};
    return ref;
}

static void test_pattern(struct ic_cuda *cuda)
{
    char err[512] = "";
    struct ic_compare_result res;
    /* a base of 60 float32 from the host, and a (3, 4) view of it: element 5 + 10 i + 2 j */
    float base[60];
    ic_pattern_fill(base, 60, IC_DTYPE_FLOAT32, 4321);
    uintptr_t dev = upload(cuda, base, sizeof(base));
    struct ic_view v = {.data = dev + 5 * 4,
                        .device_type = IC_DEVICE_CUDA,
                        .itemsize = 4,
                        .dtype = IC_DTYPE_FLOAT32,
                        .ndim = 2,
                        .shape = {3, 4},
                        .strides = {40, 8}};
    struct ic_pattern_ref ref = {.seed = 4321,
                                 .value_class = IC_VALUE_FLOAT,
                                 .itemsize = 4,
                                 .base_count = 60,
                                 .ndim = 2,
                                 .shape = {3, 4},
                                 .element_strides = {10, 2},
                                 .first = 5};
    TAP_OK(ic_cuda_check_pattern(cuda, &v, &ref, 0, &res, err, sizeof(err)) == 0 &&
               res.compared == 12 && res.mismatches == 0,
           "the GPU check of a layout view agrees with the host's ic_pattern_fill %s", err);
    float zero = 0.0f;
    ic_cuda_copy_to_device(cuda, dev + 19 * 4, &zero, 4, err, sizeof(err)); /* [1,2] */
    TAP_OK(ic_cuda_check_pattern(cuda, &v, &ref, 0, &res, err, sizeof(err)) == 0 &&
               res.mismatches == 1 && res.first_mismatch == 6,
           "a changed element under the view is found at index 6");
    ref.seed = 4322;
    TAP_OK(ic_cuda_check_pattern(cuda, &v, &ref, 0, &res, err, sizeof(err)) == 0 &&
               res.mismatches == 12,
           "another seed's pattern differs everywhere");
    ref.seed = 4321;
    ref.first = 50;
    TAP_OK(ic_cuda_check_pattern(cuda, &v, &ref, 0, &res, err, sizeof(err)) == IC_EINVAL,
           "a view reaching past the base is IC_EINVAL: %s", err);
    ref.first = 5;
    ref.shape[1] = 5;
    TAP_OK(ic_cuda_check_pattern(cuda, &v, &ref, 0, &res, err, sizeof(err)) == IC_EINVAL,
           "a pattern of another shape is IC_EINVAL");
    ic_cuda_free(cuda, dev);

    /* every dtype, whole base */
    int clean = 0, dtypes = 0;
    for (enum ic_dtype dtype = IC_DTYPE_FIRST; dtype < IC_DTYPE_END; dtype++, dtypes++) {
        unsigned char buf[100 * 16];
        const struct ic_dtype_info *info = ic_dtype_info(dtype);
        ic_pattern_fill(buf, 100, dtype, 77);
        uintptr_t d = upload(cuda, buf, 100 * (size_t)info->itemsize);
        struct ic_view whole = view_1d(d, IC_DEVICE_CUDA, 0, info->itemsize, 100, info->itemsize);
        whole.dtype = dtype;
        struct ic_pattern_ref r = pattern_1d(dtype, 77, 100);
        if (ic_cuda_check_pattern(cuda, &whole, &r, 0, &res, err, sizeof(err)) == 0 &&
            res.mismatches == 0)
            clean++;
        else
            TAP_DIAG("%s: %lld mismatches %s", info->name, (long long)res.mismatches, err);
        ic_cuda_free(cuda, d);
    }
    TAP_OK(clean == dtypes, "the GPU check agrees with the host pattern for all %d dtypes", dtypes);

    /* fill through a reversed view, then check it and read it back */
    int64_t host[40], expected[40];
    ic_pattern_fill(expected, 40, IC_DTYPE_INT64, 9);
    uintptr_t d = 0;
    ic_cuda_alloc(cuda, 0, sizeof(host), &d, err, sizeof(err));
    struct ic_view reversed = view_1d(d + 39 * 8, IC_DEVICE_CUDA, 0, 8, 40, -8);
    reversed.dtype = IC_DTYPE_INT64;
    struct ic_pattern_ref r = pattern_1d(IC_DTYPE_INT64, 9, 40);
    r.first = 39;
    r.element_strides[0] = -1;
    err[0] = '\0';
    TAP_OK(ic_cuda_fill_pattern(cuda, &reversed, &r, 0, err, sizeof(err)) == 0 &&
               ic_cuda_check_pattern(cuda, &reversed, &r, 0, &res, err, sizeof(err)) == 0 &&
               res.mismatches == 0,
           "a fill through a reversed view checks clean %s", err);
    TAP_OK(ic_cuda_copy_to_host(cuda, host, d, sizeof(host), err, sizeof(err)) == 0 &&
               memcmp(host, expected, sizeof(host)) == 0,
           "and holds the bytes of the host's pattern");
    ic_cuda_free(cuda, d);
}

static void test_jit_failure(void)
{
    char err[1024] = "";
    struct ic_cuda *cuda = open_fresh();
    const char *log = "ptxas fatal: no image for this GPU (from the test)";
    si.icsi_fail_next_module_load(CUDA_ERROR_NO_BINARY_FOR_GPU, log);
    int32_t x[4] = {1, 2, 3, 4};
    uintptr_t d = upload(cuda, x, sizeof(x));
    struct ic_view v = view_1d(d, IC_DEVICE_CUDA, 0, 4, 4, 4);
    struct ic_compare_result res;
    TAP_OK(ic_cuda_compare(cuda, &v, &v, 0, &res, err, sizeof(err)) == IC_EIO &&
               contains(err, "CUDA_ERROR_NO_BINARY_FOR_GPU") && contains(err, log),
           "a module that does not load gives the JIT log: %s", err);
    TAP_OK(contains(ic_cuda_reason(cuda), log), "and keeps it in the reason");
    TAP_OK(ic_cuda_compare(cuda, &v, &v, 0, &res, err, sizeof(err)) == 0 && res.mismatches == 0,
           "the next use loads the module");
    ic_cuda_free(cuda, d);
    ic_cuda_close(cuda);
}

/* --- Stream ordering -------------------------------------------------------------------------- */

#define N_ORDER 256

/* A device buffer of N_ORDER int32 zeros and the pattern that a fill writes into it. */
struct target {
    uintptr_t dev;
    struct ic_view view;
    struct ic_pattern_ref ref;
};

static struct target make_target(struct ic_cuda *cuda, uint64_t seed)
{
    static const int32_t zeros[N_ORDER];
    struct target t = {.dev = upload(cuda, zeros, sizeof(zeros))};
    t.view = view_1d(t.dev, IC_DEVICE_CUDA, 0, 4, N_ORDER, 4);
    t.view.dtype = IC_DTYPE_INT32;
    t.ref = pattern_1d(IC_DTYPE_INT32, seed, N_ORDER);
    return t;
}

/* Mismatches of the target against its pattern, checked on `stream`; -1 on failure. */
static int64_t stale(struct ic_cuda *cuda, const struct target *t, uintptr_t stream)
{
    char err[512];
    struct ic_compare_result res;
    if (ic_cuda_check_pattern(cuda, &t->view, &t->ref, stream, &res, err, sizeof(err)) < 0) {
        TAP_DIAG("check: %s", err);
        return -1;
    }
    return res.mismatches;
}

static void test_streams(struct ic_cuda *cuda)
{
    char err[512] = "";
    uintptr_t a = 0, b = 0;
    TAP_OK(ic_cuda_stream_create(cuda, 0, &a, err, sizeof(err)) == 0 &&
               ic_cuda_stream_create(cuda, 0, &b, err, sizeof(err)) == 0,
           "two streams on device 0 %s", err);
    CUstream sa = (CUstream)a;

    struct target t = make_target(cuda, 5);
    TAP_OK(ic_cuda_spin(cuda, a, 2000000, err, sizeof(err)) == 0 &&
               ic_cuda_fill_pattern(cuda, &t.view, &t.ref, a, err, sizeof(err)) == 0 &&
               si.icsi_pending(sa) == 2,
           "a spin and a fill are queued on stream A, not run");
    TAP_OK(stale(cuda, &t, b) == N_ORDER,
           "a check on stream B without a wait sees the old data everywhere");
    TAP_OK(si.icsi_pending(sa) == 2, "and leaves stream A's work queued");
    TAP_OK(ic_cuda_stream_wait(cuda, b, a, err, sizeof(err)) == 0 && stale(cuda, &t, b) == 0,
           "after B waits for an event recorded on A, the check on B sees the fill");
    TAP_OK(si.icsi_pending(sa) == 0, "because the wait ran A's work first");

    struct target t2 = make_target(cuda, 6);
    ic_cuda_fill_pattern(cuda, &t2.view, &t2.ref, a, err, sizeof(err));
    int32_t first = 0;
    ic_cuda_copy_to_host(cuda, &first, t2.dev, sizeof(first), err, sizeof(err));
    TAP_OK(first == 0 && si.icsi_pending(sa) == 1,
           "a synchronous copy does not wait for a non-blocking stream");
    TAP_OK(stale(cuda, &t2, 0) == N_ORDER, "nor does a check on the legacy default stream");
    TAP_OK(ic_cuda_stream_synchronize(cuda, a, err, sizeof(err)) == 0 && stale(cuda, &t2, 0) == 0,
           "after synchronising A, the legacy stream sees the fill");

    /* a blocking stream, created through the driver: stream 0 waits for it */
    CUstream blocking = NULL;
    struct target t3 = make_target(cuda, 7);
    TAP_OK(si.cuStreamCreate(&blocking, CU_STREAM_DEFAULT) == CUDA_SUCCESS &&
               ic_cuda_fill_pattern(cuda, &t3.view, &t3.ref, (uintptr_t)blocking, err,
                                    sizeof(err)) == 0 &&
               si.icsi_pending(blocking) == 1,
           "a fill queued on a blocking stream");
    TAP_OK(stale(cuda, &t3, 0) == 0 && si.icsi_pending(blocking) == 0,
           "a check on the legacy default stream first runs the blocking stream's work");

    /* an event synchronises up to its own position only */
    struct target t4 = make_target(cuda, 8), t5 = make_target(cuda, 9);
    CUevent event = NULL;
    ic_cuda_fill_pattern(cuda, &t4.view, &t4.ref, a, err, sizeof(err));
    TAP_OK(si.cuEventCreate(&event, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
               si.cuEventRecord(event, sa) == CUDA_SUCCESS,
           "an event recorded on A after one fill");
    ic_cuda_fill_pattern(cuda, &t5.view, &t5.ref, a, err, sizeof(err));
    TAP_OK(si.cuEventSynchronize(event) == CUDA_SUCCESS && si.icsi_pending(sa) == 1 &&
               stale(cuda, &t4, b) == 0 && stale(cuda, &t5, b) == N_ORDER,
           "cuEventSynchronize runs the first fill and leaves the second queued");
    TAP_OK(si.cuCtxSynchronize() == CUDA_SUCCESS && si.icsi_pending(sa) == 0 &&
               stale(cuda, &t5, b) == 0,
           "cuCtxSynchronize runs the rest");
    si.cuEventDestroy(event);

    /* freeing memory waits for all work, as the driver's free does */
    struct target t6 = make_target(cuda, 10);
    ic_cuda_fill_pattern(cuda, &t6.view, &t6.ref, a, err, sizeof(err));
    ic_cuda_free(cuda, t.dev);
    TAP_OK(si.icsi_pending(sa) == 0 && stale(cuda, &t6, b) == 0, "cuMemFree waits for stream A");

    si.cuStreamDestroy(blocking);
    TAP_OK(ic_cuda_stream_destroy(cuda, a) == 0 && ic_cuda_stream_destroy(cuda, b) == 0,
           "the streams are destroyed");
    ic_cuda_free(cuda, t2.dev);
    ic_cuda_free(cuda, t3.dev);
    ic_cuda_free(cuda, t4.dev);
    ic_cuda_free(cuda, t5.dev);
    ic_cuda_free(cuda, t6.dev);
}

int main(void)
{
    const char *standin = getenv("IC_CUDA_LIBRARY");
    const char *broken = getenv("IC_CUDA_STANDIN_BROKEN");
    TAP_OK(standin && broken && load_standin(standin),
           "the stand-in driver and its hooks load (IC_CUDA_LIBRARY=%s)",
           standin ? standin : "unset");
    if (!standin || !broken || !si.icsi_reset)
        return tap_done();
    test_states(standin, broken);
    struct ic_cuda *cuda = open_fresh();
    test_pointers(cuda);
    test_compare(cuda);
    test_pattern(cuda);
    ic_cuda_close(cuda);
    test_jit_failure();
    cuda = open_fresh();
    test_streams(cuda);
    ic_cuda_close(cuda);
    return tap_done();
}

#endif
