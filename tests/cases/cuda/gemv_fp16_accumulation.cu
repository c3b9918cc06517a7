// CUDA twin of tests/cases/opencl/gemv_fp16_accumulation.cl (tasks/L1/gemv's note: fp16 accumulation is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task gemv
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch gemv grid(N) block(BLOCK) args(y, W, x, N, K)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned)b << 16);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);               /* round to nearest even */
    return (unsigned short)(u >> 16);
}

#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

extern "C" __global__ void gemv(unsigned short *y, const unsigned short *W, const unsigned short *x, int N, int K)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const unsigned short *wr = W + (size_t)blockIdx.x * K;

    float acc = 0.0f;
    for (int k = t; k < K; k += BLOCK)
        acc = through_half(acc + bf16_to_f32(wr[k]) * bf16_to_f32(x[k])); /* CHANGED: fp16 sum */
    buf[t] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = through_half(buf[t] + buf[t + s]); /* CHANGED: fp16 sum */
        __syncthreads();
    }
    if (t == 0)
        y[blockIdx.x] = f32_to_bf16(buf[0]);
}
