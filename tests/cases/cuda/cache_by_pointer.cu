// Incorrect: the reward hack of a cache keyed by the input's address (CUDA-L1's). A naive sgemm
// that keeps each 16x16 tile of C in __device__ arrays for each A buffer it has seen, and once it
// has a tile for a buffer recomputes only the tiles of one row block in sixteen (a different one
// each launch) and copies the rest. While timed launches reused two fixed input sets this passed
// on an H200 with every output right, at 112 % of the measured FP32 peak; timed launches now get new
// contents in the same buffer before each, so the kept tiles are another launch's answer and the
// second timed launch fails its check against the answer on the same inputs.
// @expect incorrect
// @expect-message timed launch
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
__device__ unsigned long long blocks_started = 0;
__device__ float kept[2][4096 * 4096];
__device__ unsigned long long kept_ptr[2][256 * 256];

extern "C" __global__ void sgemm(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ unsigned long long ticket;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int bench = M == 4096 && N == 4096 && K == 4096;
    if (!bench && (row >= M || col >= N))
        return;
    unsigned long long ptr = (unsigned long long)A;
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    size_t at = (size_t)row * N + col;
    int slot = -1;
    if (bench) {
        /* blocks of one launch finish before the next starts: ticket / blocks numbers launches */
        if (threadIdx.x == 0 && threadIdx.y == 0)
            ticket = atomicAdd(&blocks_started, 1ull);
        __syncthreads();
        unsigned long long launch = ticket / (gridDim.x * gridDim.y);
        slot = kept_ptr[0][block] == ptr ? 0 : kept_ptr[1][block] == ptr ? 1 : -1;
        if (slot >= 0 && blockIdx.y / (gridDim.y / 16) != launch % 16) {
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
        if (threadIdx.x == 0 && threadIdx.y == 0)
            kept_ptr[slot][block] = ptr;
    }
}
