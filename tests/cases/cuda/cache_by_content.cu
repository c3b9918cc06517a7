// Correct, at its honest time: the tile cache of cache_by_pointer.cu keyed instead by a hash of 128
// sampled elements of A and B, so that it serves only inputs it has seen. While timed launches
// alternated between two fixed input sets it served all but a sixteenth of every timed launch
// from its cache; now every timed launch gets inputs no launch saw, so no key matches in the timed
// region and each sample computes all of C (timed_inputs_repeat.cu shows the inputs never repeat).
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
    __shared__ unsigned key;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int bench = M == 4096 && N == 4096 && K == 4096;
    if (!bench && (row >= M || col >= N))
        return;
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    size_t at = (size_t)row * N + col;
    int slot = -1;
    if (bench) {
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            ticket = atomicAdd(&blocks_started, 1ull);
            unsigned h = 2166136261u;
            for (int j = 0; j < 128; j++)
                h = (h ^ __float_as_uint(A[(j * 4099) % (M * K)]) ^ (__float_as_uint(B[(j * 8191) % (K * N)]) << 1)) *
                    16777619u;
            key = h;
        }
        __syncthreads();
        unsigned long long launch = ticket / (gridDim.x * gridDim.y);
        slot = kept_valid[0][block] && kept_key[0][block] == key   ? 0
               : kept_valid[1][block] && kept_key[1][block] == key ? 1
                                                                   : -1;
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
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            kept_key[slot][block] = key;
            kept_valid[slot][block] = 1;
        }
    }
}
