// CUDA twin of tests/cases/opencl/histogram_8bit_counts.cl (tasks/L1/histogram's note: 8-bit local counts are caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
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
    __shared__ unsigned local_counts[64]; /* CHANGED: 8-bit counts, four to a word */
    int t = threadIdx.x;
    for (int b = t; b < 64; b += BLOCK)
        local_counts[b] = 0; /* CHANGED */
    __syncthreads();
    size_t base = (size_t)blockIdx.x * (BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + (size_t)k * BLOCK + t;
        if (i < (size_t)N)
            atomicAdd(&local_counts[x[i] >> 2], 1u << (8 * (x[i] & 3))); /* CHANGED: a 256th count carries over */
    }
    __syncthreads();
    for (int b = t; b < 256; b += BLOCK)
        if ((local_counts[b >> 2] >> (8 * (b & 3))) & 0xffu) /* CHANGED: the count, mod 256 */
            atomicAdd(&counts[b], (int)((local_counts[b >> 2] >> (8 * (b & 3))) & 0xffu));
}
