// Wrong (tasks/L2/int8_gemm's note: int16 accumulation fails at the ordinary shapes): the task's
// baseline keeping its sum in a 16-bit integer, which wraps once |acc| passes 32767 (one
// product reaches 16129).
// @expect incorrect
// @temper task int8_gemm
// @temper launch int8_gemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(Y, A, B, M, N, K, SA, SB)
__kernel void int8_gemm(__global float *Y, __global const char *A, __global const char *B, int M, int N, int K,
                        int SA, int SB)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    short acc = 0; /* CHANGED: int16 sum */
    for (int k = 0; k < K; k++)
        acc = (short)(acc + (int)A[(size_t)row * K + k] * (int)B[(size_t)k * N + col]); /* CHANGED: wraps mod 2^16 */
    Y[(size_t)row * N + col] = ldexp(convert_float_rte(acc), -(SA + SB));
}
