// Naive baseline: one thread per element, 256 per block, with a bounds check for the tail.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
