// Wrong on purpose: the learned scale is left out.
// @temper task rows_rmsnorm_h96
// @temper launch rmsnorm grid(ceil_div(rows, 64)) block(64) args(y, x, scale, rows)
float bf16_load(ushort b) { return as_float((uint)b << 16); }

ushort bf16_store(float f)
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

__kernel void rmsnorm(__global ushort *y, __global const ushort *x, __global const ushort *scale, int rows)
{
    size_t r = get_global_id(0);
    if (r >= (size_t)rows)
        return;
    float ss = 0.0f;
    for (int j = 0; j < 96; j++) {
        float v = bf16_load(x[r * 96 + j]);
        ss += v * v;
    }
    float inv = rsqrt(ss / 96.0f + 1e-5f);
    for (int j = 0; j < 96; j++)
        y[r * 96 + j] = bf16_store(bf16_load(x[r * 96 + j]) * inv);
}
