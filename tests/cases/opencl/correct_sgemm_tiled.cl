// Correct: sgemm with 16x16 local-memory tiles. Each work-group loads a 16x16 tile of A and of B
// per step (zero outside the matrices), so each input element is read from global memory
// M/16 or N/16 times instead of M or N times.
// @expect correct
// @temper task sgemm
// @temper launch sgemm_tiled grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
#define TILE 16
__kernel void sgemm_tiled(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local float As[TILE][TILE], Bs[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
