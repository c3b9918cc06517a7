// CUDA twin of tests/cases/opencl/cumsum_half_inputs.cl (tasks/L1/cumsum's note: inputs rounded to half are caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task cumsum
// @temper param BLOCK 256
// @temper launch cumsum_rows grid(R) block(BLOCK) args(y, x, R, C)
#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

extern "C" __global__ void cumsum_rows(float *y, const float *x, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float carry = 0.0f;
    for (int c0 = 0; c0 < C; c0 += BLOCK) {
        int j = c0 + t;
        float v = j < C ? through_half(xr[j]) : 0.0f; /* CHANGED: half inputs */
        buf[t] = v;
        __syncthreads();
        for (int off = 1; off < BLOCK; off *= 2) {
            float add = t >= off ? buf[t - off] : 0.0f;
            __syncthreads(); /* every read of this step is done before the writes */
            v += add;
            buf[t] = v;
            __syncthreads();
        }
        if (j < C)
            yr[j] = carry + v;
        carry += buf[BLOCK - 1];
        __syncthreads(); /* everyone has read the total before the next chunk */
    }
}
