// Incorrect: right while N <= 100000 (b is read modulo 100000), wrong beyond; only the larger
// check shapes or the bench shapes (checked against the baseline) can catch it.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i % 100000];
}
