// Wrong (tasks/L3/moe_grouped_gemm's note: accumulating in bf16 fails 46-85% at every shape with
// Hd >= 33; it said 29-75%): the running sum rounded to bf16 after every term.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/moe_grouped_gemm_bf16_accumulation.cl).
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

/* CHANGED (added): an fp32 value rounded to bf16 and back */
__device__ __forceinline__ float round_bf16(float f)
{
    return bf16_to_f32(f32_to_bf16(f));
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
        acc = round_bf16(acc + bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f])); /* CHANGED */
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
