#include "ic_gpu.h"

#include <stddef.h>

static struct ic_cuda *ic_gpu_handle;
static bool ic_gpu_opened;

struct ic_cuda *ic_gpu(void)
{
    if (!ic_gpu_opened) {
        ic_gpu_opened = true;
        if (ic_cuda_open(&ic_gpu_handle) < 0)
            ic_gpu_handle = NULL;
    }
    return ic_gpu_handle;
}

void ic_gpu_close(void)
{
    ic_cuda_close(ic_gpu_handle);
    ic_gpu_handle = NULL;
    ic_gpu_opened = false;
}
