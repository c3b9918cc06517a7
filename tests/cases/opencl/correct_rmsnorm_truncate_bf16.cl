// Correct (tasks/L1/rmsnorm's note: rtol 1e-2 admits truncation to bf16 instead of rounding, up to
// 2^-7 = 7.8e-3 relative): the task's baseline truncating its output to bf16.
// @expect correct
// @temper task rmsnorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch rmsnorm_rows grid(R) block(BLOCK) args(y, x, w, R, C)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (ushort)(u >> 16);
}

__kernel void rmsnorm_rows(__global ushort *y, __global const ushort *x, __global const ushort *w, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const ushort *xr = x + row * C;
    __global ushort *yr = y + row * C;

    float ss = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float v = bf16_to_f32(xr[j]);
        ss += v * v;
    }
    buf[t] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float rstd = rsqrt(buf[0] / C + 1e-6f);

    for (int j = t; j < C; j += BLOCK)
        yr[j] = (ushort)(as_uint(bf16_to_f32(xr[j]) * rstd * bf16_to_f32(w[j])) >> 16); /* CHANGED: truncated */
}
