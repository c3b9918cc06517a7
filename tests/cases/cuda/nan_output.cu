// Incorrect: right except every 97th element (element 0 included), which is NaN.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = i % 97 == 0 ? __int_as_float(0x7fc00000) : a[i] + b[i];
}
