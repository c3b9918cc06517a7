// Incorrect only at the bench shapes, in a 16-bit output: rmsnorm whose rows from 1024 on, in rows
// of 1024 elements or more, come out 3 % too large (rtol is 1e-2). No check shape has both (the one
// with 65537 rows has 3 columns), so only the bench-shape comparison with the baseline's bf16
// output (R = 2048 on CPUs, 16384 on GPUs) sees it; that comparison runs on the device and must
// read bf16 as bf16.
// @expect incorrect
// @expect-message baseline
// @temper task rmsnorm
// @temper launch rmsnorm_rows grid(R) block(256) args(y, x, w, R, C)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

__kernel void rmsnorm_rows(__global ushort *y, __global const ushort *x, __global const ushort *w, int R, int C)
{
    __local float buf[256];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const ushort *xr = x + row * C;
    __global ushort *yr = y + row * C;
    float ss = 0.0f;
    for (int j = t; j < C; j += 256) {
        float v = bf16_to_f32(xr[j]);
        ss += v * v;
    }
    buf[t] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float rstd = rsqrt(buf[0] / C + 1e-6f) * (row >= 1024 && C >= 1024 ? 1.03f : 1.0f);
    for (int j = t; j < C; j += 256)
        yr[j] = f32_to_bf16(bf16_to_f32(xr[j]) * rstd * bf16_to_f32(w[j]));
}
