// Right (tasks/L2/attention_decode's note: kernels that round the unnormalized probabilities to
// bf16 for a tensor-core P.V product, as FlashAttention and flash-decoding do, pass with atol
// 4e-3): correct_attention_decode_online with exp(s - m) rounded to bf16 in P.V only; the running
// sum l stays fp32, as in FlashAttention 2. It passed 19 of 19 random secret seeds on PoCL, but the
// same bound can be reached at the shapes past 65,536 (as flash_attention's seed 22 shows), so the
// secret seed is pinned to 1, which passes. The changed line is marked CHANGED (the twin is
// tests/cases/cuda/correct_attention_decode_bf16_probs.cu).
// @expect correct
// @expect-secret-seed 1
// @temper task attention_decode
// @temper param BLOCK 64
// @temper launch decode grid(ceil_div(D, BLOCK), H) block(BLOCK) args(out, q, k, v, H, S, D)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* CHANGED (added): an fp32 value rounded to bf16 and back */
static float round_bf16(float f)
{
    return bf16_to_f32(f32_to_bf16(f));
}

__kernel void decode(__global ushort *out, __global const ushort *q, __global const ushort *k,
                     __global const ushort *v, int H, int S, int D)
{
    __local float ps[BLOCK];
    int t = get_local_id(0);
    int d = get_global_id(0);
    size_t h = get_group_id(1);
    __global const ushort *qh = q + h * D, *kh = k + h * S * D, *vh = v + h * S * D;
    float scale = 1.0f / sqrt((float)D);
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (int j0 = 0; j0 < S; j0 += BLOCK) {
        int cnt = min(BLOCK, S - j0);
        float s = -INFINITY;
        if (t < cnt) {
            __global const ushort *kj = kh + (size_t)(j0 + t) * D;
            s = 0.0f;
            for (int e = 0; e < D; e++)
                s += bf16_to_f32(qh[e]) * bf16_to_f32(kj[e]);
            s *= scale;
        }
        ps[t] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        float m_new = m;
        for (int c = 0; c < cnt; c++)
            m_new = fmax(m_new, ps[c]);
        barrier(CLK_LOCAL_MEM_FENCE); /* all maxima read before ps is overwritten */
        ps[t] = exp(s - m_new);       /* 0 for the padding past cnt */
        barrier(CLK_LOCAL_MEM_FENCE);
        float alpha = exp(m - m_new); /* 0 for the first chunk, where m = -inf */
        float sum = 0.0f, a = acc * alpha;
        for (int c = 0; c < cnt; c++) {
            sum += ps[c];
            if (d < D)
                a += round_bf16(ps[c]) * bf16_to_f32(vh[(size_t)(j0 + c) * D + d]); /* CHANGED: bf16 P */
        }
        l = l * alpha + sum;
        acc = a;
        m = m_new;
        barrier(CLK_LOCAL_MEM_FENCE); /* ps read by all before the next chunk writes it */
    }
    if (d < D)
        out[h * D + d] = f32_to_bf16(acc / l);
}
