// Wrong (tasks/L2/int8_gemm's note: a wrong shift fails at the ordinary shapes): the task's
// baseline dequantising with an arithmetic shift of the int32 sum, acc >> (SA + SB), before
// the conversion: the fraction is dropped (rounded toward minus infinity).
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
    int acc = 0;
    for (int k = 0; k < K; k++)
        acc += (int)A[(size_t)row * K + k] * (int)B[(size_t)k * N + col];
    Y[(size_t)row * N + col] = convert_float_rte(acc >> (SA + SB)); /* CHANGED: an integer shift drops the fraction */
}
