// Right (tasks/L2/rmsnorm_rope's note: an exp2-frequency kernel passes at 0.8 of the tolerance):
// the frequencies as exp2(-2i/D * log2(500000)) instead of pow, as fast RoPE kernels compute them;
// fp32 rounding of the exponent moves angles up to 16383 radians by about 1e-3. At the edge over many
// draws: on an H100 the fresh inputs of one timed launch (44) failed 7 of 67,108,864 outputs, so the case
// runs without timing (the checks and the bench shape's first draw decide).
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/correct_rmsnorm_rope_exp2_freq.cl).
// @expect correct
// @expect-no-timing
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
        float a = p * exp2f(-2.0f * i / D * 18.9315685693f); /* CHANGED: log2(500000) */
        float s, c;
        sincosf(a, &s, &c);
        float lo = bf16_to_f32(q[off + i]) * rstd * bf16_to_f32(w[i]);
        float hi = bf16_to_f32(q[off + i + hd]) * rstd * bf16_to_f32(w[i + hd]);
        out[off + i] = f32_to_bf16(lo * c - hi * s);
        out[off + i + hd] = f32_to_bf16(hi * c + lo * s);
    }
}
