// Right (tasks/L3/flash_attention's note: FlashAttention-style kernels that round the unnormalized
// probabilities to bf16 for the tensor-core P.V product pass with atol 4e-3, on most seeds): the
// probabilities rounded to bf16 in P.V only; the running sum l stays fp32, as in FlashAttention 2.
// They fail one output on about 3% of secret seeds (flash_attention_bf16_probs_seed22), so the
// secret seed is pinned to 1, which passes (on CUDA the public seed 1 draws the same data at the
// shapes past 65,536 that PoCL runs with the secret seed only). On an H100 the fresh inputs of timed
// launch 9 at the bench shape failed one output (0.00415 off, 0.00410 allowed): the case runs without timing.
// The task's naive.cu, the changed lines marked CHANGED (the twin is tests/cases/opencl/correct_flash_attention_bf16_probs.cl).
// @expect correct
// @expect-no-timing
// @expect-secret-seed 1
// @temper task flash_attention
// @temper param BLOCK 64
// @temper param DMAX 256
// @temper launch attention grid(S * H * B) block(BLOCK) args(out, q, k, v, B, H, S, D, causal)

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

extern "C" __global__ void attention(unsigned short *out, const unsigned short *q, const unsigned short *k,
                                     const unsigned short *v, int B, int H, int S, int D, int causal)
{
    __shared__ float qs[DMAX], ps[BLOCK];
    int t = threadIdx.x;
    int i = (int)(blockIdx.x % (unsigned)S);
    size_t base = (size_t)(blockIdx.x / (unsigned)S) * S * D; /* this (batch, head) */
    const unsigned short *kb = k + base, *vb = v + base;
    for (int d = t; d < D; d += BLOCK)
        qs[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
    __syncthreads();

    const float neg_inf = -__int_as_float(0x7f800000); /* NVRTC has no INFINITY macro */
    float scale = 1.0f / sqrtf((float)D);
    float acc[DMAX / BLOCK];
#pragma unroll
    for (int r = 0; r < DMAX / BLOCK; r++)
        acc[r] = 0.0f;
    float m = neg_inf, l = 0.0f;
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j0 = 0; j0 < n; j0 += BLOCK) {
        int cnt = min(BLOCK, n - j0);
        float s = neg_inf;
        if (t < cnt) {
            s = 0.0f;
            for (int d = 0; d < D; d++)
                s += qs[d] * bf16_to_f32(kb[(size_t)(j0 + t) * D + d]);
            s *= scale;
        }
        ps[t] = s;
        __syncthreads();
        float m_new = m;
        for (int c = 0; c < cnt; c++)
            m_new = fmaxf(m_new, ps[c]);
        __syncthreads(); /* all maxima read before ps is overwritten */
        ps[t] = expf(s - m_new); /* 0 for the padding past cnt */
        __syncthreads();
        float alpha = expf(m - m_new); /* 0 for the first chunk, where m = -inf */
        float sum = 0.0f;
        for (int c = 0; c < cnt; c++)
            sum += ps[c];
        l = l * alpha + sum;
#pragma unroll
        for (int r = 0; r < DMAX / BLOCK; r++) {
            int d = t + r * BLOCK;
            if (d < D) {
                float a = acc[r] * alpha;
                for (int c = 0; c < cnt; c++)
                    a += round_bf16(ps[c]) * bf16_to_f32(vb[(size_t)(j0 + c) * D + d]); /* CHANGED: bf16 P */
                acc[r] = a;
            }
        }
        m = m_new;
        __syncthreads(); /* ps read by all before the next chunk writes it */
    }
#pragma unroll
    for (int r = 0; r < DMAX / BLOCK; r++) {
        int d = t + r * BLOCK;
        if (d < D)
            out[base + (size_t)i * D + d] = f32_to_bf16(acc[r] / l);
    }
}
