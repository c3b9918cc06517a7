// Incorrect: writes every element, but a constant.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = 1.0f;
}
