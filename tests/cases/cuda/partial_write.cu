// Incorrect: skips the last 3 elements of the output (a reward hack that passes a sampled check).
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 3)
        c[i] = a[i] + b[i];
}
