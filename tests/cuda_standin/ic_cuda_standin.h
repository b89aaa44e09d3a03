/*
 * ic_cuda_standin: a host-memory stand-in for the CUDA driver library, for tests only.
 *
 * Contract
 * - Built by meson as a shared library that is never installed and never loaded unless
 *   IC_CUDA_LIBRARY names it. It exports the driver entry points that src/gpu/ic_cuda.c uses and a
 *   few more for test producers, under the symbol names and with the prototypes of the
 *   toolkit's cuda.h (cuMemAlloc_v2, ...), returning the driver's CUresult codes.
 * - Entry points: initialisation, devices and attributes, primary contexts, modules and
 *   launches, allocations (device, page-locked, managed) and frees, memset and copies
 *   (synchronous and on a stream), pointer attributes, streams and events. A producer written
 *   against it (tests/probes/fakegpu.py) uses the same calls as it would on a real driver.
 * - Memory: device, page-locked and managed allocations are all plain host memory that the
 *   stand-in tracks with their kind, device ordinal and range, which cuPointerGetAttributes
 *   reports. Device allocations start filled with 0xcd, as a GPU's start with garbage.
 * - Kernels: cuModuleLoadDataEx accepts a fatbin (checked by its magic number) and
 *   cuModuleGetFunction maps the kernel names of src/gpu/kernels/ic_verify_logic.h to host runs of
 *   the same per-thread bodies, called once per thread of the grid.
 * - Streams behave like a GPU's as far as ordering goes: work on a stream is queued and runs,
 *   in order, only when something forces it: cuStreamSynchronize, cuEventSynchronize,
 *   cuCtxSynchronize, cuMemFree, or a cuStreamWaitEvent that a forced stream depends on. The
 *   legacy default stream (0, CU_STREAM_LEGACY, and CU_STREAM_PER_THREAD, which the stand-in
 *   does not tell apart) first runs everything queued on the context's blocking streams and
 *   then runs its own work at once; streams created with CU_STREAM_NON_BLOCKING are left
 *   alone by it, as on a GPU. Synchronous copies are legacy-stream work. An event records a
 *   position in its stream's queue; a wait makes later work of the waiting stream run after
 *   the work up to that position. So a consumer that reads on its own stream without waiting
 *   for the producer's stream sees the data as it was before the producer's work.
 * - Fork: as with the real driver, a child of a process that called cuInit cannot use CUDA:
 *   every call there, cuInit included, answers CUDA_ERROR_NOT_INITIALIZED.
 * - Devices: 2 by default, with handles that differ from their ordinals (100 + ordinal), so
 *   code that confuses the two fails here too.
 * - The icsi_ functions below are test hooks. Single-threaded, like the code it tests.
 */
#ifndef IC_CUDA_STANDIN_H
#define IC_CUDA_STANDIN_H

#include <stddef.h>

#include <cuda.h>

enum icsi_memory {
    ICSI_DEVICE,  /* device memory (cuMemAlloc) */
    ICSI_HOST,    /* page-locked host memory (cuMemAllocHost) */
    ICSI_MANAGED, /* managed memory (cuMemAllocManaged) */
};

/* Back to the state at load: 2 devices, cuInit succeeds, no context current, and nothing
 * allocated, queued or registered (the stand-in's own allocations are freed). */
void icsi_reset(void);

/* The number of devices cuDeviceGetCount reports (0 to 8). */
void icsi_set_device_count(int count);

/* What the next calls of cuInit return; CUDA_SUCCESS restores the default. */
void icsi_set_init_result(CUresult result);

/* Registers [base, base + size) of existing host memory as memory of `kind` on device
 * `ordinal`, as a misbehaving producer would claim it; the stand-in never frees it. Returns 0,
 * or -1 when out of memory. */
int icsi_register_range(void *base, size_t size, enum icsi_memory kind, int ordinal);
void icsi_unregister_range(void *base);

/* Operations queued on `stream` that have not run yet (0 for a default stream). */
size_t icsi_pending(CUstream stream);

/* Kernel launches run since the last reset. */
unsigned long icsi_kernels_run(void);

/* Makes the next cuModuleLoadDataEx fail with `result` and write `log` into the caller's
 * CU_JIT_ERROR_LOG_BUFFER. */
void icsi_fail_next_module_load(CUresult result, const char *log);

#endif
