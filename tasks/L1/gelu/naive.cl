// Naive baseline: one work-item per element, 256 per work-group, with a bounds check for the
// tail. bf16 data as raw bits (ushort); the math is fp32, the result rounded once to bf16
// (nearest even).
// @temper task gelu
// @temper launch gelu_tanh grid(ceil_div(N, 256)) block(256) args(y, x, N)

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

__kernel void gelu_tanh(__global ushort *y, __global const ushort *x, int N)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)N)
        return;
    float v = bf16_to_f32(x[i]);
    float z = 0.7978845608f * (v + 0.044715f * v * v * v); /* sqrt(2/pi) */
    y[i] = f32_to_bf16(0.5f * v * (1.0f + tanh(z)));
}
