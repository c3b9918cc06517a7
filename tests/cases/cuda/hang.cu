// Timeout: never returns. The loop reads a volatile flag, so the compiler cannot remove it.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect timeout
__device__ volatile int never_set = 0;

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    while (!never_set) {
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
