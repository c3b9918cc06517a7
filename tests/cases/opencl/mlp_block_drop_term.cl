// Wrong (tasks/L3/mlp_block's note: dropping one term of the inner sum fails outright): the up
// projection's sum over E leaves out its last term (e < E - 1).
// The task's naive.cl, the changed lines marked CHANGED (the CUDA twin is tests/cases/cuda/mlp_block_drop_term.cu).
// @expect incorrect
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
    for (int e = 0; e < E - 1; e++) /* CHANGED: last term dropped */
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
