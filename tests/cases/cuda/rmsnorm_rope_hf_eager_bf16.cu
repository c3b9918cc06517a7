// Wrong (tasks/L2/rmsnorm_rope's note: the Hugging Face eager path fails;
// measured 1.1-1.6% of the outputs at most shapes, where it said 0.5-0.8%):
// the normalized q, its product with w, cos and sin and each rotation product rounded to bf16,
// as a bf16 model's eager RMSNorm and apply_rotary_pos_emb do; the spec is fp32 to the end.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/rmsnorm_rope_hf_eager_bf16.cl).
// @expect incorrect
// @temper task rmsnorm_rope
// @temper param BLOCK 64
// @temper require 1024 % BLOCK == 0
// @temper launch rmsnorm_rope grid(T * H) block(BLOCK) args(out, q, w, pos, T, H, D)

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

extern "C" __global__ void rmsnorm_rope(unsigned short *out, const unsigned short *q, const unsigned short *w,
                                        const int *pos, int T, int H, int D)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int token = blockIdx.x / H;
    size_t off = (size_t)blockIdx.x * D; /* (token * H + head) * D */
    int hd = D / 2;

    float ss = 0.0f;
    for (int d = t; d < D; d += BLOCK) {
        float v = bf16_to_f32(q[off + d]);
        ss += v * v;
    }
    buf[t] = ss;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float rstd = 1.0f / sqrtf(buf[0] / D + 1e-5f);

    float p = (float)pos[token];
    for (int i = t; i < hd; i += BLOCK) {
        float a = p * powf(500000.0f, -2.0f * i / D);
        float s, c;
        sincosf(a, &s, &c);
        c = round_bf16(c); /* CHANGED: bf16 cos, sin */
        s = round_bf16(s);
        float lo = round_bf16(round_bf16(bf16_to_f32(q[off + i]) * rstd) * bf16_to_f32(w[i])); /* CHANGED */
        float hi = round_bf16(round_bf16(bf16_to_f32(q[off + i + hd]) * rstd) * bf16_to_f32(w[i + hd])); /* CHANGED */
        out[off + i] = f32_to_bf16(round_bf16(lo * c) - round_bf16(hi * s)); /* CHANGED */
        out[off + i + hd] = f32_to_bf16(round_bf16(hi * c) + round_bf16(lo * s)); /* CHANGED */
    }
}
