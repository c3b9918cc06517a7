// Wrong (tasks/L1/hgemm's note: A read through fp16 gives inf at the shape with A ~ U(3e4,7e4)):
// the task's baseline converting each A value to fp16 before the product (exact for bf16
// values of ordinary size, inf past 65504).
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

static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void hgemm(__global ushort *C, __global const ushort *A, __global const ushort *B, int M, int N, int K)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += through_half(bf16_to_f32(A[(size_t)row * K + k])) * bf16_to_f32(B[(size_t)k * N + col]); /* CHANGED: A through fp16 */
    C[(size_t)row * N + col] = f32_to_bf16(acc);
}
