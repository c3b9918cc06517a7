// Margin case (tasks/L1/sgemm's note: one sequential (fma) accumulator passes with a 2-4x margin):
// the task's baseline (one sequential fp32 accumulator per output), each output then moved by +0.5
// of the tolerance; it and sgemm_baseline_margin_minus.cu pass together only if the kernel errs by
// at most 0.5 of the tolerance at every element. CUDA twin of
// tests/cases/opencl/sgemm_baseline_margin_plus.cl: the task's naive.cu, changed the same way.
// @expect correct
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
/* CHANGED (margin case): every output moved by +0.5 of the task's tolerance at its value,
 * atol 5e-4 + rtol 2e-5 |v|. This case and sgemm_baseline_margin_minus.cu both pass only if the kernel's own
 * error is within 0.5 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.5f * (5e-4f + 2e-5f * fabsf(v)))

extern "C" __global__ void sgemm(float *C, const float *A, const float *B, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = SHIFT(acc); /* CHANGED: moved */
}
