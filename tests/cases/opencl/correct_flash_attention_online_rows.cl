// Right (tasks/L3/flash_attention's note: a one-row-per-work-item online-softmax kernel passes at
// 0.6 of the tolerance): each work-item owns one query row, holds q and the output accumulators
// in private arrays of DMAX floats, and walks its visible keys one at a time with a running max
// m and sum l, rescaling by exp(m_old - m_new) at every key. The CUDA twin is
// tests/cases/cuda/correct_flash_attention_online_rows.cu.
// @expect correct
// @temper task flash_attention
// @temper param BLOCK 64
// @temper param DMAX 256
// @temper launch attention_rows grid(ceil_div(S, BLOCK), H, B) block(BLOCK) args(out, q, k, v, B, H, S, D, causal)

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

__kernel void attention_rows(__global ushort *out, __global const ushort *q, __global const ushort *k,
                             __global const ushort *v, int B, int H, int S, int D, int causal)
{
    int i = get_global_id(0);
    if (i >= S)
        return;
    size_t base = ((size_t)get_group_id(2) * H + get_group_id(1)) * S * D; /* this (batch, head) */
    __global const ushort *kb = k + base, *vb = v + base;
    float qr[DMAX], acc[DMAX];
    for (int d = 0; d < D; d++) {
        qr[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
        acc[d] = 0.0f;
    }
    float scale = 1.0f / sqrt((float)D);
    float m = -INFINITY, l = 0.0f;
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int d = 0; d < D; d++)
            s += qr[d] * bf16_to_f32(kb[(size_t)j * D + d]);
        s *= scale;
        float m_new = fmax(m, s);
        float alpha = exp(m - m_new); /* 0 at the first key, where m = -inf */
        float p = exp(s - m_new);
        l = l * alpha + p;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * alpha + p * bf16_to_f32(vb[(size_t)j * D + d]);
        m = m_new;
    }
    for (int d = 0; d < D; d++)
        out[base + (size_t)i * D + d] = f32_to_bf16(acc[d] / l);
}
