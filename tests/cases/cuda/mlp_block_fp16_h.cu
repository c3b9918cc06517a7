// Wrong (tasks/L3/mlp_block's note said kernels that keep h in fp16 pass; they do not): the scratch
// h is fp16, GELU's result stored without the spec's bf16 rounding. The normal-init shapes pass;
// at the integer shape T = 2, E = 65537, F = 3 the pre-activations are integers of standard
// deviation about 512, half a bf16 ulp of h is up to 4 there, and y moves by up to about 0.2. It
// fails on about 70% of secret seeds (20 of 29 random ones on PoCL); the secret seed is pinned to
// 1, which fails 1600 of the shape's 131074 outputs (on CUDA the public seed 1 draws the same data).
// The task's naive.cu, the changed lines marked CHANGED (the twin is tests/cases/opencl/mlp_block_fp16_h.cl).
// @expect incorrect
// @expect-message e=65537 f=3
// @expect-secret-seed 1
// @temper task mlp_block
// @temper scratch h f16 T*F
// @temper launch up_gelu grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(h, x, W1, T, E, F)
// @temper launch down grid(ceil_div(E, 16), ceil_div(T, 16)) block(16, 16) args(y, h, W2, T, E, F)

#include <cuda_fp16.h>

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

extern "C" __global__ void up_gelu(__half *h, /* CHANGED: fp16 h */ const unsigned short *x, const unsigned short *W1, int T, int E,
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
    h[(size_t)t * F + f] = __float2half_rn(g); /* CHANGED */
}

extern "C" __global__ void down(unsigned short *y, const __half *h, /* CHANGED */ const unsigned short *W2, int T, int E,
                                int F)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= T || e >= E)
        return;
    float acc = 0.0f;
    for (int f = 0; f < F; f++)
        acc += __half2float(h[(size_t)t * F + f]) /* CHANGED */ * bf16_to_f32(W2[(size_t)f * E + e]);
    y[(size_t)t * E + e] = f32_to_bf16(acc);
}
