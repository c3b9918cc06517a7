// CUDA twin of tests/cases/opencl/swiglu_fp16_product.cl (tasks/L2/swiglu's note: the product through fp16 is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task swiglu
// @temper launch swiglu grid(ceil_div(T*F, 256)) block(256) args(y, g, u, T, F)

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

extern "C" __global__ void swiglu(unsigned short *y, const unsigned short *g, const unsigned short *u, int T, int F)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * F)
        return;
    float x = bf16_to_f32(g[i]);
    float s = x / (1.0f + expf(-x));
    y[i] = f32_to_bf16(through_half(s * bf16_to_f32(u[i]))); /* CHANGED: the product through fp16 */
}
