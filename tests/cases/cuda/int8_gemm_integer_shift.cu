// CUDA twin of tests/cases/opencl/int8_gemm_integer_shift.cl (tasks/L2/int8_gemm's note: a wrong shift fails): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task int8_gemm
// @temper launch int8_gemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(Y, A, B, M, N, K, SA, SB)
extern "C" __global__ void int8_gemm(float *Y, const signed char *A, const signed char *B, int M, int N, int K,
                                     int SA, int SB)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    int acc = 0;
    for (int k = 0; k < K; k++)
        acc += (int)A[(size_t)row * K + k] * (int)B[(size_t)k * N + col];
    Y[(size_t)row * N + col] = __int2float_rn(acc >> (SA + SB)); /* CHANGED: an integer shift drops the fraction */
}
