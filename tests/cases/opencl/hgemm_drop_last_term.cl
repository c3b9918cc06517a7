// Wrong (tasks/L1/hgemm's note: a dropped last term is caught): the task's baseline summing
// k < K - 1.
// @expect incorrect
// @temper task hgemm
// @temper launch hgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)

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

__kernel void hgemm(__global ushort *C, __global const ushort *A, __global const ushort *B, int M, int N, int K)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K - 1; k++) /* CHANGED: the last term dropped */
        acc += bf16_to_f32(A[(size_t)row * K + k]) * bf16_to_f32(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = f32_to_bf16(acc);
}
