// CUDA twin of tests/cases/opencl/add_layernorm_output_half.cl (tasks/L2/add_layernorm's note: y in half is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task add_layernorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch add_layernorm grid(R) block(BLOCK) args(y, h, x, r, gamma, beta, R, C)

/* Sums v over the block; every thread gets the total. */
__device__ float block_sum(float *buf, float v)
{
    int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float total = buf[0];
    __syncthreads(); /* everyone has read buf[0] before it is reused */
    return total;
}

#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

extern "C" __global__ void add_layernorm(float *y, float *h, const float *x, const float *r, const float *gamma,
                                         const float *beta, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    size_t off = (size_t)blockIdx.x * C;

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float v = x[off + j] + r[off + j];
        h[off + j] = v;
        sum += v;
    }
    float mean = block_sum(buf, sum) / C;

    float sq = 0.0f;
    for (int j = t; j < C; j += BLOCK) { /* reads back only what this thread wrote */
        float d = h[off + j] - mean;
        sq += d * d;
    }
    float rstd = 1.0f / sqrtf(block_sum(buf, sq) / C + 1e-5f);

    for (int j = t; j < C; j += BLOCK)
        y[off + j] = through_half((h[off + j] - mean) * rstd * gamma[j] + beta[j]); /* CHANGED: y in half */
}
