// Wrong (tasks/L3/moe_grouped_gemm's note: a kernel that truncates to bf16 instead of rounding fails
// 7-18% of the outputs at every shape with Hd >= 33): the output truncated.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/moe_grouped_gemm_truncate_bf16.cl).
// @expect incorrect
// @temper task moe_grouped_gemm
// @temper launch moe_gemm grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(y, x, W, expert, T, Hd, F, E)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)(u >> 16); /* CHANGED: truncated, not rounded */
}

extern "C" __global__ void moe_gemm(unsigned short *y, const unsigned short *x, const unsigned short *W,
                                    const int *expert, int T, int Hd, int F, int E)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= T || f >= F)
        return;
    const unsigned short *xt = x + (size_t)t * Hd;
    const unsigned short *we = W + (size_t)expert[t] * Hd * F;
    float acc = 0.0f;
    for (int k = 0; k < Hd; k++)
        acc += bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f]);
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
