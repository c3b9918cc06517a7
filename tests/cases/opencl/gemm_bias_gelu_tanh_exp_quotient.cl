// Wrong (tasks/L2/gemm_bias_gelu's note: tanh computed as (e^2u - 1)/(e^2u + 1) is NaN for
// z > 12, the N(0,20) bias shape): the task's baseline with GELU as 0.5 z (1 + tanh(u)) and tanh
// written that way.
// @expect incorrect
// @temper task gemm_bias_gelu
// @temper launch gemm_bias_gelu grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(Y, X, W, bias, M, N, K)

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

__kernel void gemm_bias_gelu(__global ushort *Y, __global const ushort *X, __global const ushort *W,
                             __global const ushort *bias, int M, int N, int K)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += bf16_to_f32(X[(size_t)row * K + k]) * bf16_to_f32(W[(size_t)k * N + col]);
    float z = acc + bf16_to_f32(bias[col]);
    float u = 0.7978845608f * (z + 0.044715f * z * z * z); /* sqrt(2/pi) */
    /* 0.5 z (1 + tanh(u)) = z / (1 + exp(-2u)): the same function without the cancellation of
     * 1 + tanh(u) for negative z (an inf from exp gives -0, right to 1e-30 there) */
    float e2 = exp(2.0f * u); /* CHANGED: tanh as (e^2u - 1) / (e^2u + 1): inf / inf past u = 44 */
    Y[(size_t)row * N + col] = f32_to_bf16(0.5f * z * (1.0f + (e2 - 1.0f) / (e2 + 1.0f)));
}
