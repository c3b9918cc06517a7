// Incorrect: the grid rounds N / BLOCK down, so the last N % BLOCK elements are never written
// (and with N < BLOCK the grid is empty).
// @temper task vector_add
// @temper param BLOCK 256
// @temper launch vector_add grid(N / BLOCK) block(BLOCK) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
