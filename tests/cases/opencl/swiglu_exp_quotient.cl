// Wrong (tasks/L2/swiglu's note: caught): silu written x e^x / (1 + e^x). For x > 88.7, e^x
// overflows fp32 and the quotient is inf / inf = NaN; the check shape g ~ N(0, 80) has thousands of
// such elements.
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
    u += 0x7fffu + ((u >> 16) & 1u);       /* round to nearest even */
    return (ushort)(u >> 16);
}

__kernel void swiglu(__global ushort *y, __global const ushort *g, __global const ushort *u, int T, int F)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)T * F)
        return;
    float x = bf16_to_f32(g[i]);
    float s = x * exp(x) / (1.0f + exp(x)); /* CHANGED: NaN past x = 88.7 */
    y[i] = f32_to_bf16(s * bf16_to_f32(u[i]));
}
