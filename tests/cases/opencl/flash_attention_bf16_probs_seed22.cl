// Wrong on this seed (tasks/L3/flash_attention's note: FlashAttention-style kernels that round the
// unnormalized probabilities to bf16 for the P.V product pass on most seeds, not all): the kernel of
// correct_flash_attention_bf16_probs with the secret seed pinned to 22, where one output of the
// B = 1, H = 65537, S = 2, D = 2 shape should be -0.06832 and the bf16 probabilities make it -0.07275,
// 0.00443 off where 0.00434 is allowed. Of secret seeds 1 to 40, 22 alone fails so on PoCL with the
// inputs temper draws now (the ziggurat's normals; with Box-Muller's it was 34 of 1..40).
// The task's naive.cl, the changed lines marked CHANGED (the twin is tests/cases/cuda/flash_attention_bf16_probs_seed22.cu).
// @expect incorrect
// @expect-message h=65537 s=2
// @expect-secret-seed 22
// @temper task flash_attention
// @temper param BLOCK 64
// @temper param DMAX 256
// @temper launch attention grid(S, H, B) block(BLOCK) args(out, q, k, v, B, H, S, D, causal)

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

__kernel void attention(__global ushort *out, __global const ushort *q, __global const ushort *k,
                        __global const ushort *v, int B, int H, int S, int D, int causal)
{
    __local float qs[DMAX], ps[BLOCK];
    int t = get_local_id(0);
    int i = get_group_id(0);
    size_t base = ((size_t)get_group_id(2) * H + get_group_id(1)) * S * D; /* this (batch, head) */
    __global const ushort *kb = k + base, *vb = v + base;
    for (int d = t; d < D; d += BLOCK)
        qs[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
    barrier(CLK_LOCAL_MEM_FENCE);

    float scale = 1.0f / sqrt((float)D);
    float acc[DMAX / BLOCK];
    for (int r = 0; r < DMAX / BLOCK; r++)
        acc[r] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j0 = 0; j0 < n; j0 += BLOCK) {
        int cnt = min(BLOCK, n - j0);
        float s = -INFINITY;
        if (t < cnt) {
            s = 0.0f;
            for (int d = 0; d < D; d++)
                s += qs[d] * bf16_to_f32(kb[(size_t)(j0 + t) * D + d]);
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
        float sum = 0.0f;
        for (int c = 0; c < cnt; c++)
            sum += ps[c];
        l = l * alpha + sum;
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
        barrier(CLK_LOCAL_MEM_FENCE); /* ps read by all before the next chunk writes it */
    }
    for (int r = 0; r < DMAX / BLOCK; r++) {
        int d = t + r * BLOCK;
        if (d < D)
            out[base + (size_t)i * D + d] = f32_to_bf16(acc[r] / l);
    }
}
