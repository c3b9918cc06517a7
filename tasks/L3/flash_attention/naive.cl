// Naive baseline: one work-item per query row (batch, head, i), 64 rows per work-group. The
// work-item keeps its query and an fp32 output accumulator in private arrays of DMAX floats
// (the spec allows D <= 256) and walks the visible keys once with an online softmax: for each
// key, the score s = q . k / sqrt(D) in fp32, the running max m, the rescale exp(m_old - m) of
// the running sum l and of the accumulator, then acc += exp(s - m) * v. The output acc / l is
// rounded to bf16 once. bf16 travels as raw ushort bits.
// @temper task flash_attention
// @temper param DMAX 256
// @temper launch attention grid(ceil_div(S, 64), H, B) block(64) args(out, q, k, v, B, H, S, D, causal)

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

__kernel void attention(__global ushort *out, __global const ushort *q, __global const ushort *k,
                        __global const ushort *v, int B, int H, int S, int D, int causal)
{
    int i = get_global_id(0);
    if (i >= S)
        return;
    size_t base = ((size_t)get_group_id(2) * H + get_group_id(1)) * S * D; /* this (batch, head) */
    __global const ushort *kb = k + base, *vb = v + base;
    float qi[DMAX], acc[DMAX];
    float scale = 1.0f / sqrt((float)D);
    for (int d = 0; d < D; d++) {
        qi[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
        acc[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int d = 0; d < D; d++)
            s += qi[d] * bf16_to_f32(kb[(size_t)j * D + d]);
        s *= scale;
        float m_new = fmax(m, s);
        float alpha = exp(m - m_new); /* 0 for the first key, where m = -inf */
        float p = exp(s - m_new);
        l = l * alpha + p;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * alpha + p * bf16_to_f32(vb[(size_t)j * D + d]);
        m = m_new;
    }
    for (int d = 0; d < D; d++)
        out[base + (size_t)i * D + d] = f32_to_bf16(acc[d] / l);
}
