/*
 * ic_gpu: the process-wide CUDA handle. The first call opens the driver (ic_cuda_open); every
 * later call returns the same handle, whatever its state, until ic_gpu_close at exit. The
 * protocol modules, the exchange and the commands reach the GPU through it, so a process opens
 * the driver once.
 */
#ifndef IC_GPU_H
#define IC_GPU_H

#include "ic_cuda.h"

/* Never NULL unless memory ran out; check ic_cuda_state() before GPU work. */
struct ic_cuda *ic_gpu(void);
void ic_gpu_close(void);

#endif
