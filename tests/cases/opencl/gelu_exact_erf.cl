// Wrong for this task (tasks/L1/gelu's note: caught): the exact-erf GELU, 0.5 x (1 + erf(x / sqrt 2)),
// instead of the task's tanh approximation. In the tail they differ: 11% at x = -3, about ten
// times the tolerance there (atol 2e-5 + rtol 5e-3 |y|).
// @expect incorrect
// @temper task gelu
// @temper launch gelu_k grid(ceil_div(N, 256)) block(256) args(y, x, N)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* nearest even */
    return (ushort)(u >> 16);
}

static float gelu(float v)
{
    return 0.5f * v * (1.0f + erf(v * 0.70710678f));
}

__kernel void gelu_k(__global ushort *y, __global const ushort *x, int N)
{
    int i = get_global_id(0);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
