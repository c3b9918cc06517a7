// Naive baseline: one work-item per element of C (x = column, y = row), 16x16 work-groups,
// a 2-D grid rounded up, and a bounds check for the edges. Row-major C = A*B.
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
__kernel void sgemm(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
