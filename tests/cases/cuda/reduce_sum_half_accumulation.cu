// CUDA twin of tests/cases/opencl/reduce_sum_half_accumulation.cl (tasks/L1/reduce_sum's note: half accumulation is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task reduce_sum
// @temper param BLOCK 256
// @temper scratch partial f32 ceil_div(N, BLOCK)
// @temper require 1024 % BLOCK == 0
// @temper launch block_sums grid(ceil_div(N, BLOCK)) block(BLOCK) args(partial, x, N)
// @temper launch final_sum grid(1) block(BLOCK) args(out, partial, N)

/* Tree reduction of buf[0..BLOCK) into buf[0]; every thread of the block must call it. */
#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

__device__ void tree_sum(float *buf, int t)
{
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = through_half(buf[t] + buf[t + s]); /* CHANGED: fp16 sums */
        __syncthreads();
    }
}

extern "C" __global__ void block_sums(float *partial, const float *x, int N)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    size_t i = (size_t)blockIdx.x * BLOCK + t;
    buf[t] = i < (size_t)N ? x[i] : 0.0f;
    tree_sum(buf, t);
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}

extern "C" __global__ void final_sum(float *out, const float *partial, int N)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int nparts = N / BLOCK + (N % BLOCK != 0); /* ceil_div without overflowing near 2^31 */
    float s = 0.0f;
    for (int j = t; j < nparts; j += BLOCK)
        s += partial[j];
    buf[t] = s;
    tree_sum(buf, t);
    if (t == 0)
        out[0] = buf[0];
}
