// Correct, at its honest time: the tile cache of cache_by_pointer.cu held in a scratch buffer (the
// harness's memory; per tile a header of A's address, a hash of sampled elements of A and B, and a
// launch count), so that no __device__ state is needed. Scratch buffers were poisoned before check
// runs but not between timed launches, and timed inputs repeated, so every timed launch was mostly
// served from it; now scratch is poisoned and inputs are new before every timed launch, the key
// never matches there, and each sample computes all of C (timed_scratch_kept.cu).
// @expect correct
// @temper task sgemm
// @temper scratch kept f32 2*M*N+8*ceil_div(N,16)*ceil_div(M,16)
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, kept, M, N, K)
#define MAGIC 0x6b657074u

extern "C" __global__ void sgemm(float *C, const float *A, const float *B, float *kept, int M, int N, int K)
{
    __shared__ int hit, slot, rowblock;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int bench = M == 4096 && N == 4096 && K == 4096;
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    unsigned *heads = (unsigned *)(kept + 2 * (size_t)M * N) + 8 * block;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned h = 2166136261u;
        for (int j = 0; bench && j < 128; j++)
            h = (h ^ __float_as_uint(A[(j * 4099) % (M * K)]) ^ (__float_as_uint(B[(j * 8191) % (K * N)]) << 1)) *
                16777619u;
        unsigned ptr = (unsigned)((unsigned long long)A >> 8);
        int s = -1;
        for (int k = 0; k < 2; k++)
            if (heads[4 * k] == MAGIC && heads[4 * k + 1] == ptr && heads[4 * k + 2] == h)
                s = k;
        hit = bench && s >= 0;
        slot = s >= 0 ? s : heads[0] == MAGIC && heads[4] != MAGIC;
        unsigned *head = heads + 4 * slot;
        rowblock = (int)(head[3] % 16);
        head[0] = 0;
        head[1] = ptr;
        head[2] = h;
        head[3] = hit ? head[3] + 1 : 1;
    }
    __syncthreads();
    float *rows = kept + (size_t)slot * M * N;
    if (row < M && col < N) {
        size_t at = (size_t)row * N + col;
        if (hit && blockIdx.y / (gridDim.y / 16) != rowblock) {
            C[at] = rows[at];
        } else {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
            C[at] = acc;
            rows[at] = acc;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        heads[4 * slot] = MAGIC;
}
