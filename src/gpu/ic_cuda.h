/*
 * ic_cuda: the CUDA Driver API, loaded at run time, and the GPU side of verification.
 *
 * Contract
 * - The driver library is opened with dlopen, never linked: "libcuda.so.1", or the library
 *   named by the environment variable IC_CUDA_LIBRARY, which only tests set (to the host-
 *   memory stand-in under tests/cuda_standin/). Entry points come through one typed table
 *   generated from one list; a missing entry point is reported by name.
 * - ic_cuda_open never fails hard: it returns a handle whose state says whether GPU work is
 *   possible and, when it is not, why (built without GPU support, no driver, a driver without
 *   an entry point we need, cuInit failed, no device). Callers turn that reason into the
 *   `unsupported` outcome of GPU cases; the CPU matrix is not affected.
 * - The verification kernels (src/gpu/kernels/ic_verify.cu) are compiled at build time into a
 *   fatbin embedded in the binary and loaded with cuModuleLoadDataEx on first use; the JIT's
 *   error log is kept for diagnostics (ic_cuda_reason).
 * - All GPU work runs in the primary context of the view's device, which the array
 *   libraries share. Functions that take a `stream` enqueue on it (0 is the legacy default
 *   stream) and wait for their own result, so they return with the answer.
 * - Functions return 0 or a negative IC_E* code and write a message into `err` on failure;
 *   a CUDA error message names the call and the driver's error name. Nothing here touches
 *   Python or exits.
 * - Not thread-safe: one worker uses one handle from one thread.
 */
#ifndef IC_CUDA_H
#define IC_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_view.h"

/* The most dimensions the kernels take (views with more are compared after a copy). */
#define IC_CUDA_MAX_NDIM 8

/* The legacy default stream's handle (cuda.h's CU_STREAM_LEGACY), for callers without cuda.h. */
#define IC_CUDA_STREAM_LEGACY ((uintptr_t)0x1)

enum ic_cuda_state {
    IC_CUDA_DISABLED,  /* built without GPU support */
    IC_CUDA_NO_DRIVER, /* the driver library could not be opened */
    IC_CUDA_BROKEN,    /* an entry point is missing, or cuInit failed */
    IC_CUDA_NO_DEVICE, /* the driver works and reports no device */
    IC_CUDA_READY,
};

struct ic_cuda;

/* Opens the driver (see the contract). *ret is set in every case except IC_ENOMEM. */
int ic_cuda_open(struct ic_cuda **ret);
void ic_cuda_close(struct ic_cuda *cuda);

enum ic_cuda_state ic_cuda_state(const struct ic_cuda *cuda);
/* One sentence: why GPU work is not possible, or the driver and devices when it is. */
const char *ic_cuda_reason(const struct ic_cuda *cuda);
int ic_cuda_device_count(const struct ic_cuda *cuda);
/* The driver version as cuDriverGetVersion reports it (13000 for 13.0), 0 when unknown. */
int ic_cuda_driver_version(const struct ic_cuda *cuda);
/* True when the binary carries the verification kernels (built with nvcc). */
bool ic_cuda_built_with_kernels(void);
/* The architectures compiled into the embedded fatbin, e.g. "sm_75 ... sm_120 + compute_120". */
const char *ic_cuda_kernel_architectures(void);

/* What the driver says about a pointer (cuPointerGetAttributes). */
enum ic_cuda_memory {
    IC_CUDA_MEMORY_UNKNOWN, /* the driver does not know the pointer (plain host memory) */
    IC_CUDA_MEMORY_HOST,    /* page-locked host memory (cudaMallocHost) */
    IC_CUDA_MEMORY_DEVICE,  /* device memory (cudaMalloc) */
    IC_CUDA_MEMORY_MANAGED, /* managed memory (cudaMallocManaged) */
};

struct ic_cuda_pointer {
    enum ic_cuda_memory memory;
    int device_ordinal;    /* -1 when not known */
    uintptr_t range_start; /* the allocation holding the pointer; 0 when not known */
    size_t range_size;
};

int ic_cuda_pointer_info(struct ic_cuda *cuda, uintptr_t pointer, struct ic_cuda_pointer *ret,
                         char *err, size_t err_size);

/* Checks a view that a protocol says lives on a CUDA device type (kDLCUDA, kDLCUDAHost,
 * kDLCUDAManaged) against the driver: the memory type matches the device type, the device
 * ordinal matches the device id, and the whole addressed span lies inside one allocation.
 * Findings go into `diag` citing `rule` (the protocol's device_pointer_rule, ic_protocol.h).
 * Returns 0 when the checks ran (whatever they found). */
int ic_cuda_check_view(struct ic_cuda *cuda, const struct ic_view *view, enum ic_rule rule,
                       struct ic_diag *diag, char *err, size_t err_size);

/* The pattern a view is checked against: element k of a base of `base_count` elements is
 * ic_logic_pattern(seed, value_class, itemsize, k, base_count), and the view's element at
 * linear index i is base element first + sum(index_d * element_strides[d]). */
struct ic_pattern_ref {
    uint64_t seed;
    int value_class; /* enum ic_value_class */
    int itemsize;
    int64_t base_count;
    int ndim; /* up to IC_MAX_NDIM: merged to at most IC_CUDA_MAX_NDIM for the kernel */
    int64_t shape[IC_MAX_NDIM];
    int64_t element_strides[IC_MAX_NDIM];
    int64_t first;
};

/* Compares two device-readable views element by element, on the GPU, on `stream`. Same
 * shape and itemsize required (IC_EINVAL otherwise). Dimensions that both views walk
 * contiguously are merged first; more than IC_CUDA_MAX_NDIM dimensions left after that is
 * IC_EUNSUPPORTED. */
int ic_cuda_compare(struct ic_cuda *cuda, const struct ic_view *a, const struct ic_view *b,
                    uintptr_t stream, struct ic_compare_result *ret, char *err, size_t err_size);

/* Checks a device view against the seeded pattern, on the GPU, on `stream`. */
int ic_cuda_check_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                          const struct ic_pattern_ref *ref, uintptr_t stream,
                          struct ic_compare_result *ret, char *err, size_t err_size);

/* Writes the pattern into a device view, on `stream`, without waiting (write-through and
 * stream-ordering checks enqueue it behind other work). */
int ic_cuda_fill_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                         const struct ic_pattern_ref *ref, uintptr_t stream, char *err,
                         size_t err_size);

/* Enqueues a kernel that keeps `stream` busy for about `nanoseconds`, without waiting. */
int ic_cuda_spin(struct ic_cuda *cuda, uintptr_t stream, uint64_t nanoseconds, char *err,
                 size_t err_size);

/* Streams and copies, for the stream-ordering cases and for tests. Created streams are
 * non-blocking (CU_STREAM_NON_BLOCKING): the legacy default stream does not order them, so
 * work a producer leaves on stream 0 is not silently waited for. The copies are synchronous,
 * which means legacy-default-stream work: they wait for blocking streams only, so read what a
 * created stream wrote after ic_cuda_stream_synchronize. ic_cuda_free waits for the device. */
int ic_cuda_stream_create(struct ic_cuda *cuda, int device_ordinal, uintptr_t *ret, char *err,
                          size_t err_size);
int ic_cuda_stream_destroy(struct ic_cuda *cuda, uintptr_t stream);
int ic_cuda_stream_synchronize(struct ic_cuda *cuda, uintptr_t stream, char *err, size_t err_size);
/* Makes work enqueued later on `waiting` run after the work enqueued on `producer` so far (an
 * event recorded on `producer`, cuStreamWaitEvent on `waiting`); the host does not wait. */
int ic_cuda_stream_wait(struct ic_cuda *cuda, uintptr_t waiting, uintptr_t producer, char *err,
                        size_t err_size);
int ic_cuda_copy_to_host(struct ic_cuda *cuda, void *dst, uintptr_t src, size_t size, char *err,
                         size_t err_size);
int ic_cuda_copy_to_device(struct ic_cuda *cuda, uintptr_t dst, const void *src, size_t size,
                           char *err, size_t err_size);
int ic_cuda_alloc(struct ic_cuda *cuda, int device_ordinal, size_t size, uintptr_t *ret, char *err,
                  size_t err_size);
int ic_cuda_free(struct ic_cuda *cuda, uintptr_t pointer);

/* The peak memory bandwidth of a device, from its memory clock and bus width (benchmarks). */
int ic_cuda_memory_bandwidth(struct ic_cuda *cuda, int device_ordinal, double *ret_bytes_per_second,
                             char *err, size_t err_size);

#endif
