// Correct (tasks/L1/gelu's note: the sigmoid form with a fast exp is the accurate fast route):
// 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)) with native_exp, rounded once to nearest bf16. For
// x < -10.7, exp(-2z) overflows to inf and the quotient goes to -0, never NaN.
// @expect correct
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
    float z2 = 1.5957691216f * (v + 0.044715f * v * v * v);
    return v / (1.0f + native_exp(-z2));
}

__kernel void gelu_k(__global ushort *y, __global const ushort *x, int N)
{
    int i = get_global_id(0);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
