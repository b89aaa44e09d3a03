/* ic_cuda_disabled.c: ic_cuda.h for a build without GPU support (meson.build, "CUDA"). The
 * handle is always IC_CUDA_DISABLED, its reason says how to enable GPU support, and every
 * GPU operation is IC_EUNSUPPORTED with that reason, so callers need no build-time test. */
#include "ic_cuda.h"

#include <stdio.h>
#include <stdlib.h>

#include "ic_config.h"
#include "ic_error.h"

struct ic_cuda {
    char reason[512];
};

int ic_cuda_open(struct ic_cuda **ret)
{
    struct ic_cuda *cuda = calloc(1, sizeof(*cuda));
    if (!cuda)
        return IC_ENOMEM;
    snprintf(cuda->reason, sizeof(cuda->reason),
             "interopcheck was built without GPU support (%s): install the CUDA toolkit (nvcc "
             "and cuda.h) and reconfigure with -Dcuda=enabled",
             IC_CUDA_OFF_REASON);
    *ret = cuda;
    return 0;
}

void ic_cuda_close(struct ic_cuda *cuda)
{
    free(cuda);
}

enum ic_cuda_state ic_cuda_state(const struct ic_cuda *cuda)
{
    (void)cuda;
    return IC_CUDA_DISABLED;
}

const char *ic_cuda_reason(const struct ic_cuda *cuda)
{
    return cuda->reason;
}

int ic_cuda_device_count(const struct ic_cuda *cuda)
{
    (void)cuda;
    return 0;
}

int ic_cuda_driver_version(const struct ic_cuda *cuda)
{
    (void)cuda;
    return 0;
}

bool ic_cuda_built_with_kernels(void)
{
    return false;
}

const char *ic_cuda_kernel_architectures(void)
{
    return "none";
}

static int ic_cuda_unsupported(const struct ic_cuda *cuda, char *err, size_t err_size)
{
    snprintf(err, err_size, "no GPU work is possible: %s", cuda->reason);
    return IC_EUNSUPPORTED;
}

int ic_cuda_pointer_info(struct ic_cuda *cuda, uintptr_t pointer, struct ic_cuda_pointer *ret,
                         char *err, size_t err_size)
{
    (void)pointer, (void)ret;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_check_view(struct ic_cuda *cuda, const struct ic_view *view, enum ic_rule rule,
                       struct ic_diag *diag, char *err, size_t err_size)
{
    (void)view, (void)rule, (void)diag;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_compare(struct ic_cuda *cuda, const struct ic_view *a, const struct ic_view *b,
                    uintptr_t stream, struct ic_compare_result *ret, char *err, size_t err_size)
{
    (void)a, (void)b, (void)stream, (void)ret;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_check_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                          const struct ic_pattern_ref *ref, uintptr_t stream,
                          struct ic_compare_result *ret, char *err, size_t err_size)
{
    (void)view, (void)ref, (void)stream, (void)ret;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_fill_pattern(struct ic_cuda *cuda, const struct ic_view *view,
                         const struct ic_pattern_ref *ref, uintptr_t stream, char *err,
                         size_t err_size)
{
    (void)view, (void)ref, (void)stream;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_spin(struct ic_cuda *cuda, uintptr_t stream, uint64_t nanoseconds, char *err,
                 size_t err_size)
{
    (void)stream, (void)nanoseconds;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_stream_create(struct ic_cuda *cuda, int device_ordinal, uintptr_t *ret, char *err,
                          size_t err_size)
{
    (void)device_ordinal, (void)ret;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_stream_destroy(struct ic_cuda *cuda, uintptr_t stream)
{
    (void)cuda, (void)stream;
    return IC_EUNSUPPORTED;
}

int ic_cuda_stream_synchronize(struct ic_cuda *cuda, uintptr_t stream, char *err, size_t err_size)
{
    (void)stream;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_stream_wait(struct ic_cuda *cuda, uintptr_t waiting, uintptr_t producer, char *err,
                        size_t err_size)
{
    (void)waiting, (void)producer;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_copy_to_host(struct ic_cuda *cuda, void *dst, uintptr_t src, size_t size, char *err,
                         size_t err_size)
{
    (void)dst, (void)src, (void)size;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_copy_to_device(struct ic_cuda *cuda, uintptr_t dst, const void *src, size_t size,
                           char *err, size_t err_size)
{
    (void)dst, (void)src, (void)size;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_alloc(struct ic_cuda *cuda, int device_ordinal, size_t size, uintptr_t *ret, char *err,
                  size_t err_size)
{
    (void)device_ordinal, (void)size, (void)ret;
    return ic_cuda_unsupported(cuda, err, err_size);
}

int ic_cuda_free(struct ic_cuda *cuda, uintptr_t pointer)
{
    (void)cuda, (void)pointer;
    return IC_EUNSUPPORTED;
}

int ic_cuda_memory_bandwidth(struct ic_cuda *cuda, int device_ordinal, double *ret_bytes_per_second,
                             char *err, size_t err_size)
{
    (void)device_ordinal, (void)ret_bytes_per_second;
    return ic_cuda_unsupported(cuda, err, err_size);
}
