// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward_kernel4 (as kernel 3,
// one warp per row, but one pass: sum(x) and sum(x^2) together, var = mean(x^2) - mean(x)^2).
// Expected: incorrect: on the check shape x ~ N(100, 1), C = 1024, mean(x^2) is about 10,001 and
// the variance about 1: fp32 keeps only 4 decimal digits of the variance's 1 after the
// subtraction, and the rounding errors of the 32 lanes' partial sums of x^2 (ulp 2^-10 to 2^-4)
// leave rstd off by 0.1% to 1%, far past rtol 1e-4 on outputs up to 4 in magnitude.
// @expect incorrect
// @temper task layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel4 grid(ceil_div(R * 32, 256)) block(256) args(y, mean, rstd, x, gamma, beta, R, C)
__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void layernorm_forward_kernel4(float *__restrict__ out, float *__restrict__ mean,
                                                     float *__restrict__ rstd, const float *__restrict__ inp,
                                                     const float *__restrict__ weight,
                                                     const float *__restrict__ bias, int N, int C)
{
    int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
    int idx = blockIdx.x * warps + warp;
    if (idx >= N)
        return;
    const float *x = inp + idx * C;
    float sum1 = 0.0f, sum2 = 0.0f;
    for (int i = lane; i < C; i += warpSize) {
        float xi = x[i];
        sum1 += xi;
        sum2 += xi * xi;
    }
    float mean1 = warp_reduce_sum(sum1) / C, mean2 = warp_reduce_sum(sum2) / C;
    float s = rsqrtf(mean2 - mean1 * mean1 + 1e-5f);
    if (lane == 0) {
        __stcs(mean + idx, mean1);
        __stcs(rstd + idx, s);
    }
    float *o = out + idx * C;
    for (int c = lane; c < C; c += warpSize)
        __stcs(o + c, s * (__ldcs(x + c) - mean1) * weight[c] + bias[c]);
}
