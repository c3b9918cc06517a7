// Wrong by the task's check-shape tolerance (tasks/L2/swiglu's note claimed it passes; corrected): the
// task's baseline (tasks/L2/swiglu/naive.cl) with its one rounding to bf16 replaced by truncation
// (dropping the low 16 bits). Truncation errs by up to one bf16 ulp, 2^-7 = 7.8e-3 relative, past
// the check-shape rtol of 5e-3 for a good share of the outputs; only the bench-shape comparison
// with the rounded baseline output allows that extra rounding step.
// @expect incorrect
// @temper task swiglu
// @temper launch swiglu grid(ceil_div(T*F, 256)) block(256) args(y, g, u, T, F)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    return (ushort)(u >> 16); /* truncation */
}

__kernel void swiglu(__global ushort *y, __global const ushort *g, __global const ushort *u, int T, int F)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)T * F)
        return;
    float x = bf16_to_f32(g[i]);
    float s = x / (1.0f + exp(-x));
    y[i] = f32_to_bf16(s * bf16_to_f32(u[i]));
}
