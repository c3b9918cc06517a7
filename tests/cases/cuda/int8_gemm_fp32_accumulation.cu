// CUDA twin of tests/cases/opencl/int8_gemm_fp32_accumulation.cl (tasks/L2/int8_gemm's note: fp32 accumulation is caught where partial sums pass 2^24): the task's naive.cu with the change
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
    float acc = 0.0f; /* CHANGED: fp32 accumulation */
    for (int k = 0; k < K; k++)
        acc += (int)A[(size_t)row * K + k] * (int)B[(size_t)k * N + col];
    Y[(size_t)row * N + col] = ldexpf(acc, -(SA + SB)); /* CHANGED */
}
