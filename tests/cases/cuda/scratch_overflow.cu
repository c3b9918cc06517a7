// Wrong: a two-launch vector_add whose first launch writes one element past the end of its
// scratch buffer (bound `i <= N`); the output is right. The guard zones after the scratch buffer
// see the stray write.
// @expect incorrect
// @expect-message guard zone after scratch acc
// @temper task vector_add
// @temper scratch acc f32 N
// @temper launch sum grid(ceil_div(N + 1, 256)) block(256) args(acc, a, b, N)
// @temper launch store grid(ceil_div(N, 256)) block(256) args(c, acc, N)

extern "C" __global__ void sum(float *acc, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        acc[i] = a[i] + b[i];
    else if (i == N)
        acc[i] = 0.0f;
}

extern "C" __global__ void store(float *c, const float *acc, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = acc[i];
}
