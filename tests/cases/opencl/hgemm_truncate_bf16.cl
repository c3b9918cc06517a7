// Wrong by the task's check-shape tolerance (tasks/L1/hgemm's note claimed it passes; corrected): the
// task's baseline (tasks/L1/hgemm/naive.cl) with its one rounding to bf16 replaced by truncation
// (dropping the low 16 bits). Truncation errs by up to one bf16 ulp, 2^-7 = 7.8e-3 relative, past
// the check-shape rtol of 5e-3 for a good share of the outputs; only the bench-shape comparison
// with the rounded baseline output allows that extra rounding step.
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
    return (ushort)(u >> 16); /* truncation */
}

__kernel void hgemm(__global ushort *C, __global const ushort *A, __global const ushort *B, int M, int N, int K)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += bf16_to_f32(A[(size_t)row * K + k]) * bf16_to_f32(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = f32_to_bf16(acc);
}
