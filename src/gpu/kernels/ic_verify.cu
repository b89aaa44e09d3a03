/*
 * ic_verify.cu: the verification kernels, compiled by nvcc at build time into one fatbin that
 * the binary embeds (src/gpu/kernels/meson.build) and ic_cuda.c loads with cuModuleLoadDataEx.
 *
 * Each kernel only computes its thread's place in the grid and calls the per-thread body of
 * ic_verify_logic.h, which the host stand-in of the driver runs too. The names are extern "C"
 * so that cuModuleGetFunction finds them unmangled. The parameter struct is __grid_constant__:
 * the body takes its address, and this keeps it in the parameter space instead of copying
 * ~250 bytes into every thread's local memory.
 */
#include <stdint.h>

#include "kernels/ic_verify_logic.h"

__device__ __forceinline__ int64_t ic_verify_thread(void)
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t ic_verify_thread_count(void)
{
    return (int64_t)gridDim.x * blockDim.x;
}

extern "C" __global__ void ic_verify_compare(const __grid_constant__ ic_verify_compare_args args)
{
    ic_verify_compare_thread(&args, ic_verify_thread(), ic_verify_thread_count());
}

extern "C" __global__ void
ic_verify_check_pattern(const __grid_constant__ ic_verify_pattern_args args)
{
    ic_verify_check_pattern_thread(&args, ic_verify_thread(), ic_verify_thread_count());
}

extern "C" __global__ void
ic_verify_fill_pattern(const __grid_constant__ ic_verify_pattern_args args)
{
    ic_verify_fill_pattern_thread(&args, ic_verify_thread(), ic_verify_thread_count());
}

extern "C" __global__ void ic_verify_spin(const __grid_constant__ ic_verify_spin_args args)
{
    ic_verify_spin_thread(&args, ic_verify_thread(), ic_verify_thread_count());
}
