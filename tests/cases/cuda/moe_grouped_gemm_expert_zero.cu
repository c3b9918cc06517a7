// Wrong (tasks/L3/moe_grouped_gemm's note: ignoring the routing, expert 0 for every row, fails
// 33-99% of the outputs at every shape with E > 1 and more than three tokens): every token uses expert 0's weights.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/moe_grouped_gemm_expert_zero.cl).
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

extern "C" __global__ void moe_gemm(unsigned short *y, const unsigned short *x, const unsigned short *W,
                                    const int *expert, int T, int Hd, int F, int E)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= T || f >= F)
        return;
    const unsigned short *xt = x + (size_t)t * Hd;
    const unsigned short *we = W; /* CHANGED: expert 0 for every token */
    float acc = 0.0f;
    for (int k = 0; k < Hd; k++)
        acc += bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f]);
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
