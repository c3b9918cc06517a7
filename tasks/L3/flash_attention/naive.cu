// Naive baseline: one thread per query row (batch, head, i), 64 rows per block. The thread
// keeps its query and an fp32 output accumulator in per-thread arrays of DMAX floats (the spec
// allows D <= 256) and walks the visible keys once with an online softmax: for each key, the
// score s = q . k / sqrt(D) in fp32, the running max m, the rescale exp(m_old - m) of the
// running sum l and of the accumulator, then acc += exp(s - m) * v. The output acc / l is
// rounded to bf16 once. bf16 travels as raw unsigned short bits.
// @temper task flash_attention
// @temper param DMAX 256
// @temper launch attention grid(ceil_div(S, 64), H, B) block(64) args(out, q, k, v, B, H, S, D, causal)

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

extern "C" __global__ void attention(unsigned short *out, const unsigned short *q, const unsigned short *k,
                                     const unsigned short *v, int B, int H, int S, int D, int causal)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= S)
        return;
    size_t base = ((size_t)blockIdx.z * H + blockIdx.y) * S * D; /* this (batch, head) */
    const unsigned short *kb = k + base, *vb = v + base;
    float qi[DMAX], acc[DMAX];
    float scale = 1.0f / sqrtf((float)D);
    for (int d = 0; d < D; d++) {
        qi[d] = bf16_to_f32(q[base + (size_t)i * D + d]);
        acc[d] = 0.0f;
    }
    float m = -__int_as_float(0x7f800000), l = 0.0f; /* -inf; NVRTC has no INFINITY macro */
    int n = causal ? i + 1 : S; /* keys 0 .. n-1 are visible */
    for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int d = 0; d < D; d++)
            s += qi[d] * bf16_to_f32(kb[(size_t)j * D + d]);
        s *= scale;
        float m_new = fmaxf(m, s);
        float alpha = expf(m - m_new); /* 0 for the first key, where m = -inf */
        float p = expf(s - m_new);
        l = l * alpha + p;
        for (int d = 0; d < D; d++)
            acc[d] = acc[d] * alpha + p * bf16_to_f32(vb[(size_t)j * D + d]);
        m = m_new;
    }
    for (int d = 0; d < D; d++)
        out[base + (size_t)i * D + d] = f32_to_bf16(acc[d] / l);
}
