// Wrong (tasks/L2/swiglu's note: a product through fp16 overflows at the g ~ N(0,80),
// u ~ N(0,3000) shape, and loses small y at the ordinary shapes): the task's baseline rounding
// silu(g) * u to fp16 before the bf16 rounding.
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

static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void swiglu(__global ushort *y, __global const ushort *g, __global const ushort *u, int T, int F)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)T * F)
        return;
    float x = bf16_to_f32(g[i]);
    float s = x / (1.0f + exp(-x));
    y[i] = f32_to_bf16(through_half(s * bf16_to_f32(u[i]))); /* CHANGED: the product through fp16 */
}
