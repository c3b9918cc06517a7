// Wrong (tasks/L2/rmsnorm_rope's note: the q ~ N(100, 3000) shape overflows a sum of squares kept
// in fp16): each work-item's running sum of q^2 rounded to half after every term; past 65504 it
// is inf, rstd 0 and the outputs 0.
// The task's naive.cl, the changed lines marked CHANGED (the CUDA twin is tests/cases/cuda/rmsnorm_rope_half_squares_sum.cu).
// @expect incorrect
// @temper task rmsnorm_rope
// @temper param BLOCK 64
// @temper require 1024 % BLOCK == 0
// @temper launch rmsnorm_rope grid(T, H) block(BLOCK) args(out, q, w, pos, T, H, D)

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

__kernel void rmsnorm_rope(__global ushort *out, __global const ushort *q, __global const ushort *w,
                           __global const int *pos, int T, int H, int D)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    int token = get_group_id(0);
    size_t off = ((size_t)token * H + get_group_id(1)) * D;
    int hd = D / 2;

    float ss = 0.0f;
    for (int d = t; d < D; d += BLOCK) {
        float v = bf16_to_f32(q[off + d]);
        { ushort hb; vstore_half(ss + v * v, 0, (__private half *)&hb); ss = vload_half(0, (__private half *)&hb); } /* CHANGED: sum in half */
    }
    buf[t] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float rstd = 1.0f / sqrt(buf[0] / D + 1e-5f);

    float p = (float)pos[token];
    for (int i = t; i < hd; i += BLOCK) {
        float a = p * pow(500000.0f, -2.0f * i / D);
        float c = cos(a), s = sin(a);
        float lo = bf16_to_f32(q[off + i]) * rstd * bf16_to_f32(w[i]);
        float hi = bf16_to_f32(q[off + i + hd]) * rstd * bf16_to_f32(w[i + hd]);
        out[off + i] = f32_to_bf16(lo * c - hi * s);
        out[off + i + hd] = f32_to_bf16(hi * c + lo * s);
    }
}
