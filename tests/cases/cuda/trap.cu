// Runtime error: one thread calls __trap(), which kills the context.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect runtime_error
// @expect-message unspecified launch failure
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == n / 2)
        __trap();
    if (i < n)
        c[i] = a[i] + b[i];
}
