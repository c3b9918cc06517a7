// Incorrect: at the bench shape it counts its launches in a __device__ variable and does no work
// on every tenth (launches 9, 19, ...), leaving the poisoned output in place. Check shapes, the
// first runs at the bench shape and the median time are all untouched; only the verification of
// every timed launch's output sees it.
// @expect incorrect
// @expect-message timed launch
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__device__ unsigned long long blocks_started = 0;

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    __shared__ unsigned long long ticket;
    if (n >= (1 << 22)) {
        /* blocks of one launch finish before the next starts, so ticket / gridDim.x numbers launches */
        if (threadIdx.x == 0)
            ticket = atomicAdd(&blocks_started, 1ull);
        __syncthreads();
        if (ticket / gridDim.x % 10 == 9)
            return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
