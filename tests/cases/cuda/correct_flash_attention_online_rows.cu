// Right (tasks/L3/flash_attention's note: a one-row-per-work-item online-softmax kernel passes at
// 0.6 of the tolerance): each thread owns one query row (rows of every (batch, head) share grid x,
// queries fastest: grid y and z stop at 65535, and B or H may pass it), holds q and the output
// accumulators in per-thread arrays of DMAX floats, and walks its visible keys one at a time with
// a running max m and sum l, rescaling by exp(m_old - m_new) at every key. The OpenCL twin is
// tests/cases/opencl/correct_flash_attention_online_rows.cl.
// @expect correct
// @temper task flash_attention
// @temper param BLOCK 64
// @temper param DMAX 256
// @temper launch attention_rows grid(ceil_div(S * H * B, BLOCK)) block(BLOCK) args(out, q, k, v, B, H, S, D, causal)

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

extern "C" __global__ void attention_rows(unsigned short *out, const unsigned short *q, const unsigned short *k,
                                          const unsigned short *v, int B, int H, int S, int D, int causal)
{
    size_t row = (size_t)blockIdx.x * BLOCK + threadIdx.x; /* (batch, head, i), i fastest */
    if (row >= (size_t)S * H * B)
        return;
    int i = (int)(row % (unsigned)S);
    size_t base = (row / (unsigned)S) * S * D; /* this (batch, head) */
    const unsigned short *kb = k + base, *vb = v + base;
    float qr[DMAX], acc[DMAX];
    for (int d = 0; d < D; d++) {
        qr[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
        acc[d] = 0.0f;
    }
    float scale = 1.0f / sqrtf((float)D);
    float m = -__int_as_float(0x7f800000), l = 0.0f; /* m = -inf */
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int d = 0; d < D; d++)
            s += qr[d] * bf16_to_f32(kb[(size_t)j * D + d]);
        s *= scale;
        float m_new = fmaxf(m, s);
        float alpha = expf(m - m_new); /* 0 at the first key, where m = -inf */
        float p = expf(s - m_new);
        l = l * alpha + p;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * alpha + p * bf16_to_f32(vb[(size_t)j * D + d]);
        m = m_new;
    }
    for (int d = 0; d < D; d++)
        out[base + (size_t)i * D + d] = f32_to_bf16(acc[d] / l);
}
