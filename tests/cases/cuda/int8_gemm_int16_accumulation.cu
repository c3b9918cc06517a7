// CUDA twin of tests/cases/opencl/int8_gemm_int16_accumulation.cl (tasks/L2/int8_gemm's note: int16 accumulation fails at the ordinary shapes): the task's naive.cu with the change
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
    short acc = 0; /* CHANGED: int16 sum */
    for (int k = 0; k < K; k++)
        acc = (short)(acc + (int)A[(size_t)row * K + k] * (int)B[(size_t)k * N + col]); /* CHANGED: wraps mod 2^16 */
    Y[(size_t)row * N + col] = ldexpf(__int2float_rn(acc), -(SA + SB));
}
