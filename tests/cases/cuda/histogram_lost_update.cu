// Wrong (tasks/L1/histogram's note: on a GPU a lost update, a non-atomic read-modify-write,
// shows as a count short): the task's naive.cu counting into shared memory with a plain
// increment instead of atomicAdd, the change marked CHANGED. CUDA only: PoCL runs a work-group's
// items one after another, so an OpenCL twin's verdict would depend on how PoCL schedules them.
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
    __shared__ int local_counts[256];
    int t = threadIdx.x;
    for (int b = t; b < 256; b += BLOCK)
        local_counts[b] = 0;
    __syncthreads();
    size_t base = (size_t)blockIdx.x * (BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + (size_t)k * BLOCK + t;
        if (i < (size_t)N)
            local_counts[x[i]]++; /* CHANGED: not atomic: threads of a block lose each other's updates */
    }
    __syncthreads();
    for (int b = t; b < 256; b += BLOCK)
        if (local_counts[b])
            atomicAdd(&counts[b], local_counts[b]);
}
