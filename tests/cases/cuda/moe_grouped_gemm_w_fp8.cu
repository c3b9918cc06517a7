// Wrong (tasks/L3/moe_grouped_gemm's note: truncating W to a 4-bit significand, fp8-like, fails
// most outputs): each weight cut to 3 stored significand bits (e4m3's precision) before the product.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/moe_grouped_gemm_w_fp8.cl).
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
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* CHANGED (added): f rounded to a 4-bit significand (3 stored bits, as fp8 e4m3), nearest even */
__device__ __forceinline__ float round_sig4(float f)
{
    unsigned u = __float_as_uint(f);
    return __uint_as_float((u + 0x7ffffu + ((u >> 20) & 1u)) & 0xfff00000u);
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
        acc += bf16_to_f32(xt[k]) * round_sig4(bf16_to_f32(we[(size_t)k * F + f])); /* CHANGED: fp8-like W */
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
