// Ported from karpathy/llm.c, dev/cuda/fused_residual_forward.cu, fused_residual_forward1: the
// unfused baseline, residual_forward_kernel (one thread per element, h = x + r) then
// layernorm_forward_kernel3 (one warp per row, two-pass mean and variance) on h, mean and rstd
// into scratch.
// Expected: correct: h is the correctly rounded fp32 sum the task stores, and the layernorm
// reads it back after the first launch has finished.
// @expect correct
// @temper task add_layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch residual_forward_kernel grid(ceil_div(R * C, 256)) block(256) args(h, x, r, R * C)
// @temper launch layernorm_forward_kernel3 grid(ceil_div(R * 32, 256)) block(256) args(y, mean, rstd, h, gamma, beta, R, C)
extern "C" __global__ void residual_forward_kernel(float *out, const float *inp1, const float *inp2, int N)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N)
        out[idx] = inp1[idx] + inp2[idx];
}

__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void layernorm_forward_kernel3(float *out, float *mean, float *rstd, const float *inp,
                                                     const float *weight, const float *bias, int N, int C)
{
    int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int idx = blockIdx.x * warps + warp;
    if (idx >= N)
        return;
    const float *x = inp + (size_t)idx * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += 32)
        sum += x[i];
    float m = warp_reduce_sum(sum) / C;
    sum = 0.0f;
    for (int i = lane; i < C; i += 32)
        sum += (x[i] - m) * (x[i] - m);
    float s = rsqrtf(warp_reduce_sum(sum) / C + 1e-5f);
    if (lane == 0) {
        mean[idx] = m;
        rstd[idx] = s;
    }
    float *o = out + (size_t)idx * C;
    for (int c = lane; c < C; c += 32)
        o[c] = s * (x[c] - m) * weight[c] + bias[c];
}
