// Wrong (tasks/L1/gelu's note, corrected: caught at the check shapes): the GELU right in fp32 but
// truncated to bf16 instead of rounded. Truncation errs by up to one bf16 ulp (2^-7 = 7.8e-3
// relative), over the check-shape rtol of 5e-3 for a good share of the elements; only the
// bench-shape comparison with the rounded baseline output allows one rounding step more.
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
    return (ushort)(u >> 16); /* truncation: drops the low 16 bits */
}

static float gelu(float v)
{
    float z = 0.79788456f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanh(z));
}

__kernel void gelu_k(__global ushort *y, __global const ushort *x, int N)
{
    int i = get_global_id(0);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
