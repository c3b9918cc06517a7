// Wrong (tasks/L1/gelu's note: caught): tanh written as (e^2z - 1) / (e^2z + 1). Past |x| of about
// 10.7, e^2z overflows fp32 to inf and the quotient is inf / inf = NaN; the adversarial check shape
// N(0, 20) puts most elements there.
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
    float z = 0.79788456f * (v + 0.044715f * v * v * v);
    float e = exp(2.0f * z);
    return 0.5f * v * (1.0f + (e - 1.0f) / (e + 1.0f));
}

__kernel void gelu_k(__global ushort *y, __global const ushort *x, int N)
{
    int i = get_global_id(0);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
