// Wrong (tasks/L3/moe_grouped_gemm's note: ignoring the routing, expert 0 for every row, fails
// 33-99% of the outputs at every shape with E > 1 and more than three tokens): every token uses expert 0's weights.
// The task's naive.cl, the changed lines marked CHANGED (the CUDA twin is tests/cases/cuda/moe_grouped_gemm_expert_zero.cu).
// @expect incorrect
// @temper task moe_grouped_gemm
// @temper launch moe_gemm grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(y, x, W, expert, T, Hd, F, E)

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

__kernel void moe_gemm(__global ushort *y, __global const ushort *x, __global const ushort *W,
                       __global const int *expert, int T, int Hd, int F, int E)
{
    int f = get_global_id(0);
    int t = get_global_id(1);
    if (t >= T || f >= F)
        return;
    __global const ushort *xt = x + (size_t)t * Hd;
    __global const ushort *we = W; /* CHANGED: expert 0 for every token */
    float acc = 0.0f;
    for (int k = 0; k < Hd; k++)
        acc += bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f]);
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
