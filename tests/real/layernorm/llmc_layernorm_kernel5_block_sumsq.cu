// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward_kernel5 (one block
// per row, the one-pass sum(x), sum(x^2) of kernel 4 reduced by warps and then across warps
// through shared memory).
// Expected: incorrect, as kernel 4: var = mean(x^2) - mean(x)^2 cancels on the N(100, 1) check
// shape.
// @expect incorrect
// @temper task layernorm
// @temper param BLOCK 256 1024
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel5 grid(R) block(BLOCK) args(y, mean, rstd, x, gamma, beta, R, C)
__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void layernorm_forward_kernel5(float *__restrict__ out, float *__restrict__ mean,
                                                     float *__restrict__ rstd, const float *__restrict__ inp,
                                                     const float *__restrict__ weight,
                                                     const float *__restrict__ bias, int N, int C)
{
    __shared__ float shared_sum[32], shared_sum2[32];
    int num_warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32, idx = blockIdx.x;
    const float *x = inp + idx * C;
    float s1 = 0.0f, s2 = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xi = x[i];
        s1 += xi;
        s2 += xi * xi;
    }
    shared_sum[warp] = warp_reduce_sum(s1);
    shared_sum2[warp] = warp_reduce_sum(s2);
    __syncthreads();
    s1 = warp_reduce_sum(lane < num_warps ? shared_sum[lane] : 0.0f) / C;
    s2 = warp_reduce_sum(lane < num_warps ? shared_sum2[lane] : 0.0f) / C;
    float m = s1, s = rsqrtf(s2 - m * m + 1e-5f);
    if (threadIdx.x == 0) {
        __stcs(mean + idx, m);
        __stcs(rstd + idx, s);
    }
    float *o = out + idx * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        __stcs(o + i, s * (__ldcs(x + i) - m) * weight[i] + bias[i]);
}
