// Incorrect: computes the right output but zeroes its input a afterwards.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
// @expect incorrect
extern "C" __global__ void vector_add(float *c, float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
        a[i] = 0.0f;
    }
}
