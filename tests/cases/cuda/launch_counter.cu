// Incorrect: counts its launches on bench-sized inputs in a __device__ variable and stops
// computing after the third, leaving the old output in place (caching across calls). Checks on
// small shapes pass; the verification of timed outputs, with inputs changed between timed
// launches, catches it.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
__device__ unsigned long long blocks_started = 0;

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    __shared__ unsigned long long ticket;
    if (n >= (1 << 20)) {
        /* blocks of one launch finish before the next starts, so ticket / gridDim.x numbers launches */
        if (threadIdx.x == 0)
            ticket = atomicAdd(&blocks_started, 1ull);
        __syncthreads();
        if (ticket / gridDim.x >= 3)
            return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
