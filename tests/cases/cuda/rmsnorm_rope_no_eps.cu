// Wrong (tasks/L2/rmsnorm_rope's note: dropping eps fails about 99% at the q ~ N(0, 0.001) shape,
// whose mean square 1e-6 is below eps 1e-5): the baseline without eps.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/rmsnorm_rope_no_eps.cl).
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
    float rstd = 1.0f / sqrtf(buf[0] / D); /* CHANGED: no eps */

    float p = (float)pos[token];
    for (int i = t; i < hd; i += BLOCK) {
        float a = p * powf(500000.0f, -2.0f * i / D);
        float s, c;
        sincosf(a, &s, &c);
        float lo = bf16_to_f32(q[off + i]) * rstd * bf16_to_f32(w[i]);
        float hi = bf16_to_f32(q[off + i + hd]) * rstd * bf16_to_f32(w[i + hd]);
        out[off + i] = f32_to_bf16(lo * c - hi * s);
        out[off + i + hd] = f32_to_bf16(hi * c + lo * s);
    }
}
