// Correct: C = A B (row-major, M x K times K x N), TILE x TILE tiles of A and B staged in shared
// memory, one output element per thread, edges guarded.
// @temper task sgemm
// @temper param TILE 16 32
// @temper launch sgemm_tiled grid(ceil_div(N, TILE), ceil_div(M, TILE)) block(TILE, TILE) args(C, A, B, M, N, K)
// @expect correct
extern "C" __global__ void sgemm_tiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
