// Runtime error: writes 1 TiB past the output, far outside any allocation.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect runtime_error
// @expect-message illegal memory access
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i + (1ll << 38)] = a[i] + b[i];
}
