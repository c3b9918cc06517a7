// Naive baseline in two launches with a bf16 scratch buffer for the intermediate activation:
// (1) one work-item per (t, f): a = x[t,:] . W1[:,f] in fp32, h = bf16(gelu_tanh(a));
// (2) one work-item per (t, e): y = bf16(h[t,:] . W2[:,e]) in fp32.
// 16x16 work-groups (x = column, y = row), 2-D grids rounded up with bounds checks.
// bf16 travels as raw ushort bits.
// @temper task mlp_block
// @temper scratch h bf16 T*F
// @temper launch up_gelu grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(h, x, W1, T, E, F)
// @temper launch down grid(ceil_div(E, 16), ceil_div(T, 16)) block(16, 16) args(y, h, W2, T, E, F)

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

__kernel void up_gelu(__global ushort *h, __global const ushort *x, __global const ushort *W1, int T, int E, int F)
{
    int f = get_global_id(0);
    int t = get_global_id(1);
    if (t >= T || f >= F)
        return;
    float a = 0.0f;
    for (int e = 0; e < E; e++)
        a += bf16_to_f32(x[(size_t)t * E + e]) * bf16_to_f32(W1[(size_t)e * F + f]);
    float g = 0.5f * a * (1.0f + tanh(0.7978845608f * (a + 0.044715f * a * a * a)));
    h[(size_t)t * F + f] = f32_to_bf16(g);
}

__kernel void down(__global ushort *y, __global const ushort *h, __global const ushort *W2, int T, int E, int F)
{
    int e = get_global_id(0);
    int t = get_global_id(1);
    if (t >= T || e >= E)
        return;
    float acc = 0.0f;
    for (int f = 0; f < F; f++)
        acc += bf16_to_f32(h[(size_t)t * F + f]) * bf16_to_f32(W2[(size_t)f * E + e]);
    y[(size_t)t * E + e] = f32_to_bf16(acc);
}
