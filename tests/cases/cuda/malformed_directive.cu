// Invalid: the launch line's grid( is never closed.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256) block(256) args(c, a, b, N)
// @expect invalid
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
