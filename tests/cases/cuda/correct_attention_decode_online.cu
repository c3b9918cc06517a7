// Right (tasks/L2/attention_decode's note: a single-pass online-softmax kernel passes at 0.8 of the
// tolerance): one launch, no scratch. A block of BLOCK threads owns BLOCK output dims of one head
// (blocks of a head adjacent in grid x: grid y stops at 65535 and D / BLOCK may pass it); it walks
// the cached tokens in chunks of BLOCK (thread t scores token j0 + t into shared memory), keeps a
// running max m and sum l, rescales its accumulator by exp(m_old - m_new) and adds
// exp(s - m_new) * v. Every block of a head recomputes the head's scores. The OpenCL twin is
// tests/cases/opencl/correct_attention_decode_online.cl.
// @expect correct
// @temper task attention_decode
// @temper param BLOCK 64
// @temper launch decode grid(ceil_div(D, BLOCK) * H) block(BLOCK) args(out, q, k, v, H, S, D)

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

extern "C" __global__ void decode(unsigned short *out, const unsigned short *q, const unsigned short *k,
                                  const unsigned short *v, int H, int S, int D)
{
    __shared__ float ps[BLOCK];
    int t = threadIdx.x;
    unsigned per_head = ((unsigned)D + BLOCK - 1) / BLOCK;
    int d = (int)(blockIdx.x % per_head) * BLOCK + t;
    size_t h = blockIdx.x / per_head;
    const unsigned short *qh = q + h * D, *kh = k + h * S * D, *vh = v + h * S * D;
    const float neg_inf = -__int_as_float(0x7f800000);
    float scale = 1.0f / sqrtf((float)D);
    float m = neg_inf, l = 0.0f, acc = 0.0f;
    for (int j0 = 0; j0 < S; j0 += BLOCK) {
        int cnt = min(BLOCK, S - j0);
        float s = neg_inf;
        if (t < cnt) {
            const unsigned short *kj = kh + (size_t)(j0 + t) * D;
            s = 0.0f;
            for (int e = 0; e < D; e++)
                s += bf16_to_f32(qh[e]) * bf16_to_f32(kj[e]);
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
        float sum = 0.0f, a = acc * alpha;
        for (int c = 0; c < cnt; c++) {
            sum += ps[c];
            if (d < D)
                a += ps[c] * bf16_to_f32(vh[(size_t)(j0 + c) * D + d]);
        }
        l = l * alpha + sum;
        acc = a;
        m = m_new;
        __syncthreads(); /* ps read by all before the next chunk writes it */
    }
    if (d < D)
        out[h * D + d] = f32_to_bf16(acc / l);
}
