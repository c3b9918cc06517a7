// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward_kernel3 (one warp
// per row; warp-shuffle sums for the mean and then the squared deviations; __ldcs/__stcs
// streaming loads and stores), launched with grid ceil_div(R * 32, block) as its launcher does.
// Expected: correct: two passes, no cancellation.
// @expect correct
// @temper task layernorm
// @temper param BLOCK 256 512
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel3 grid(ceil_div(R * 32, BLOCK)) block(BLOCK) args(y, mean, rstd, x, gamma, beta, R, C)
__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void layernorm_forward_kernel3(float *__restrict__ out, float *__restrict__ mean,
                                                     float *__restrict__ rstd, const float *__restrict__ inp,
                                                     const float *__restrict__ weight,
                                                     const float *__restrict__ bias, int N, int C)
{
    int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
    int idx = blockIdx.x * warps + warp;
    if (idx >= N)
        return;
    const float *x = inp + idx * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += warpSize)
        sum += x[i];
    float m = warp_reduce_sum(sum) / C;
    if (lane == 0)
        __stcs(mean + idx, m);
    sum = 0.0f;
    for (int i = lane; i < C; i += warpSize) {
        float d = x[i] - m;
        sum += d * d;
    }
    float s = rsqrtf(warp_reduce_sum(sum) / C + 1e-5f);
    if (lane == 0)
        __stcs(rstd + idx, s);
    float *o = out + idx * C;
    for (int c = lane; c < C; c += warpSize)
        __stcs(o + c, s * (__ldcs(x + c) - m) * weight[c] + bias[c]);
}
