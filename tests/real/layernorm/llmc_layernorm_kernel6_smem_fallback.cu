// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward_kernel6 (a warp per
// row, the row cached in dynamic shared memory, warpsPerBlock * C floats, while one pass sums x
// and x^2; __launch_bounds__(512)), with the fallback llm.c's later launchers use when that
// shared memory does not fit: kernel 3 (two passes, global memory), as a when(...) group.
// Expected: incorrect: rows that fit take kernel 6, whose var = mean(x^2) - mean(x)^2 cancels on
// the N(100, 1) check shape (R = 64, C = 1024); the fallback serves C = 65537 correctly.
// @expect incorrect
// @temper task layernorm
// @temper param BLOCK 128 256 512
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel6 grid(ceil_div(R * 32, BLOCK)) block(BLOCK) smem(BLOCK / 32 * C * 4) args(y, mean, rstd, x, gamma, beta, R, C) when(BLOCK / 32 * C * 4 <= SMEM_PER_BLOCK_OPTIN)
// @temper launch layernorm_forward_kernel3 grid(ceil_div(R * 32, BLOCK)) block(BLOCK) args(y, mean, rstd, x, gamma, beta, R, C) when(1)
__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(512)
    layernorm_forward_kernel6(float *__restrict__ out, float *__restrict__ mean, float *__restrict__ rstd,
                              const float *__restrict__ inp, const float *__restrict__ weight,
                              const float *__restrict__ bias, int N, int C)
{
    extern __shared__ float xShared[];
    int warps = blockDim.x / warpSize, warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
    float *const xs = xShared + warp * C;
    int row = blockIdx.x * warps + warp;
    if (row >= N)
        return;
    const float *const x = inp + row * C;
    float *const y = out + row * C;
    float s1 = 0.0f, s2 = 0.0f;
    for (int i = lane; i < C; i += warpSize) {
        float xi = x[i];
        xs[i] = xi;
        s1 += xi;
        s2 += xi * xi;
    }
    float mean1 = warp_reduce_sum(s1) / C, mean2 = warp_reduce_sum(s2) / C;
    float inv_std = rsqrtf(mean2 - mean1 * mean1 + 1e-5f);
    if (lane == 0) {
        __stcs(mean + row, mean1);
        __stcs(rstd + row, inv_std);
    }
    for (int i = lane; i < C; i += warpSize)
        __stcs(y + i, weight[i] * (xs[i] - mean1) * inv_std + bias[i]);
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
    sum = 0.0f;
    for (int i = lane; i < C; i += warpSize)
        sum += (x[i] - m) * (x[i] - m);
    float s = rsqrtf(warp_reduce_sum(sum) / C + 1e-5f);
    if (lane == 0) {
        __stcs(mean + idx, m);
        __stcs(rstd + idx, s);
    }
    float *o = out + idx * C;
    for (int c = lane; c < C; c += warpSize)
        __stcs(o + c, s * (__ldcs(x + c) - m) * weight[c] + bias[c]);
}
