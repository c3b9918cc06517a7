// Ported from karpathy/llm.c, fused_residual_forward_kernel5 (dev/cuda/fused_residual_forward.cu;
// also in llmc/layernorm.cuh): a warp per row, blockDim.y rows per block; weight and bias staged in
// shared memory as x128 packets before any thread may exit, each row's residual kept in shared
// memory, `if(idx > N) return;` for the rows, packets of x128::size (4 in an fp32 build) with no
// tail. Launched as its launcher: block (32, 4), grid ceil_div(N, 4), smem (2 + 4) * C * 4.
// Expected: runtime_error (a misaligned address): the kernel assumes C is a multiple of 4 and
// N of 4. At the first check shape, R = 1, C = 1, `idx > N` lets row idx == 1 (one past the end)
// run, and its row starts 4 bytes in: the float4 load there is misaligned, which kills the
// kernel. Had it been aligned, whole packets past each row's end (C = 1, 1000) and the extra row
// would have written past h and y, into the guard zones.
// @expect runtime_error
// @temper task add_layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch fused_residual_forward_kernel5 grid(ceil_div(R, 4)) block(32, 4) smem((2 + 4) * C * 4 + 64) args(h, y, mean, rstd, x, r, gamma, beta, R, C)
__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void fused_residual_forward_kernel5(float *residual, float *normed, float *mean, float *rstd,
                                                          const float *inp1, const float *inp2, const float *weight,
                                                          const float *bias, int N, int C)
{
    extern __shared__ float4 params[];
    float4 *s_weight = params, *s_bias = params + C / 4, *s_res = params + (2 + threadIdx.y) * C / 4;
    int sidx = (threadIdx.x + 32 * threadIdx.y) * 4;
    for (int i = sidx; i < C; i += blockDim.y * 32 * 4) {
        s_weight[i / 4] = *reinterpret_cast<const float4 *>(weight + i);
        s_bias[i / 4] = *reinterpret_cast<const float4 *>(bias + i);
    }
    __syncthreads();
    int idx = blockIdx.x * blockDim.y + threadIdx.y;
    if (idx > N)
        return;
    residual += (size_t)C * idx;
    normed += (size_t)C * idx;
    inp1 += (size_t)C * idx;
    inp2 += (size_t)C * idx;
    float sum = 0.0f;
    for (int c = threadIdx.x * 4; c < C; c += 32 * 4) {
        float4 a = __ldcs(reinterpret_cast<const float4 *>(inp1 + c));
        float4 b = __ldcs(reinterpret_cast<const float4 *>(inp2 + c));
        float4 o = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
        sum += o.x + o.y + o.z + o.w;
        __stcs(reinterpret_cast<float4 *>(residual + c), o);
        s_res[c / 4] = o;
    }
    float m = warp_reduce_sum(sum) / C, v = 0.0f;
    for (int c = threadIdx.x * 4; c < C; c += 32 * 4) {
        float4 res = s_res[c / 4];
        v += (res.x - m) * (res.x - m) + (res.y - m) * (res.y - m) + (res.z - m) * (res.z - m) +
             (res.w - m) * (res.w - m);
    }
    float s = rsqrtf(warp_reduce_sum(v) / C + 1e-5f);
    for (int c = threadIdx.x * 4; c < C; c += 32 * 4) {
        float4 res = s_res[c / 4], w = s_weight[c / 4], b = s_bias[c / 4];
        float4 o = make_float4(s * (res.x - m) * w.x + b.x, s * (res.y - m) * w.y + b.y, s * (res.z - m) * w.z + b.z,
                               s * (res.w - m) * w.w + b.w);
        __stcs(reinterpret_cast<float4 *>(normed + c), o);
    }
    if (threadIdx.x == 0) {
        mean[idx] = m;
        rstd[idx] = s;
    }
}
