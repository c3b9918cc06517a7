// Naive baseline in two launches. The first zeroes the 256 counts (the outputs arrive
// poisoned). The second: each block of BLOCK threads takes BLOCK * ITEMS consecutive bytes,
// counts them into a shared-memory histogram with atomicAdd (each thread reads ITEMS bytes,
// BLOCK apart, so that reads are coalesced), then adds its nonzero bins to the global counts
// with global atomicAdd.
// @temper task histogram
// @temper param BLOCK 256
// @temper param ITEMS 16
// @temper launch hist_zero grid(1) block(256) args(counts)
// @temper launch hist_count grid(ceil_div(N, BLOCK * ITEMS)) block(BLOCK) args(counts, x, N)
extern "C" __global__ void hist_zero(int *counts)
{
    counts[threadIdx.x] = 0;
}

extern "C" __global__ void hist_count(int *counts, const unsigned char *x, int N)
{
    __shared__ int local_counts[256];
    int t = threadIdx.x;
    for (int b = t; b < 256; b += BLOCK)
        local_counts[b] = 0;
    __syncthreads();
    size_t base = (size_t)blockIdx.x * (BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + (size_t)k * BLOCK + t;
        if (i < (size_t)N)
            atomicAdd(&local_counts[x[i]], 1);
    }
    __syncthreads();
    for (int b = t; b < 256; b += BLOCK)
        if (local_counts[b])
            atomicAdd(&counts[b], local_counts[b]);
}
