// Correct, at its honest time: a naive sgemm that keeps each block's tile of C, for each of the two
// input sets it has seen (keyed by the bits of A[0]), in __device__ arrays, and at the bench shape
// serves every fourth launch from there instead of computing it. Every output it serves is right,
// bit for bit. While timed launches alternated between the two input sets of the checks, those
// launches ran under the roofline floor and formed a cluster far faster than the median, which the
// timing caught; now every timed launch gets inputs no launch saw, its key never matches there,
// and every sample is computed (served launches remain among the warm-ups, whose times are not
// kept).
// @expect correct
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
__device__ unsigned long long blocks_started = 0;
__device__ float kept[2][4096 * 4096];
__device__ unsigned kept_key[2][256 * 256];
__device__ unsigned kept_valid[2][256 * 256];

extern "C" __global__ void sgemm(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ unsigned long long ticket;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int bench = M == 4096 && N == 4096 && K == 4096;
    if (!bench && (row >= M || col >= N))
        return;
    unsigned key = __float_as_uint(A[0]);
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    size_t at = (size_t)row * N + col;
    int slot = -1;
    if (bench) {
        /* blocks of one launch finish before the next starts: ticket / blocks numbers launches */
        if (threadIdx.x == 0 && threadIdx.y == 0)
            ticket = atomicAdd(&blocks_started, 1ull);
        __syncthreads();
        unsigned long long launch = ticket / (gridDim.x * gridDim.y);
        slot = kept_valid[0][block] && kept_key[0][block] == key   ? 0
               : kept_valid[1][block] && kept_key[1][block] == key ? 1
                                                                   : -1;
        if (launch % 4 == 3 && slot >= 0) {
            C[at] = kept[slot][at];
            return;
        }
        if (slot < 0)
            slot = (int)(launch & 1);
    }
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[at] = acc;
    if (bench) {
        kept[slot][at] = acc;
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            kept_key[slot][block] = key;
            kept_valid[slot][block] = 1;
        }
    }
}
