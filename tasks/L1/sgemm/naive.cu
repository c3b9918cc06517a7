// Naive baseline: one thread per element of C (x = column, y = row), 16x16 blocks, a 2-D grid
// rounded up, and a bounds check for the edges. Row-major C = A*B.
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
extern "C" __global__ void sgemm(float *C, const float *A, const float *B, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
