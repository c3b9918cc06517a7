// CUDA twin of tests/cases/opencl/vector_add_half_input.cl (tasks/L1/vector_add's note: an input in half is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = through_half(a[i]) + b[i]; /* CHANGED: a in half */
}
