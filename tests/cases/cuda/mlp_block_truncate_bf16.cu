// Wrong (tasks/L3/mlp_block's note: a kernel that truncates y to bf16 instead of rounding fails,
// 6-8% of the outputs at T = 1, E = 300, F = 1200 and 0.6-1.3% at the integer shape; it said
// 2.5-35% at every shape with F >= 97, but F = 97, 256 and 257 pass on most seeds): y truncated, h still rounded.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/mlp_block_truncate_bf16.cl).
// @expect incorrect
// @temper task mlp_block
// @temper scratch h bf16 T*F
// @temper launch up_gelu grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(h, x, W1, T, E, F)
// @temper launch down grid(ceil_div(E, 16), ceil_div(T, 16)) block(16, 16) args(y, h, W2, T, E, F)

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

extern "C" __global__ void up_gelu(unsigned short *h, const unsigned short *x, const unsigned short *W1, int T, int E,
                                   int F)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= T || f >= F)
        return;
    float a = 0.0f;
    for (int e = 0; e < E; e++)
        a += bf16_to_f32(x[(size_t)t * E + e]) * bf16_to_f32(W1[(size_t)e * F + f]);
    float g = 0.5f * a * (1.0f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)));
    h[(size_t)t * F + f] = f32_to_bf16(g);
}

extern "C" __global__ void down(unsigned short *y, const unsigned short *h, const unsigned short *W2, int T, int E,
                                int F)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= T || e >= E)
        return;
    float acc = 0.0f;
    for (int f = 0; f < F; f++)
        acc += bf16_to_f32(h[(size_t)t * F + f]) * bf16_to_f32(W2[(size_t)f * E + e]);
    y[(size_t)t * E + e] = (unsigned short)(__float_as_uint(acc) >> 16); /* CHANGED: truncated */
}
