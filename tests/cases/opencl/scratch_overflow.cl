// Wrong: a two-launch vector_add whose first launch writes one element past the end of its
// scratch buffer (bound `i <= N`); the output is right. The guard zones after the scratch buffer
// see the stray write.
// @expect incorrect
// @expect-message guard zone after scratch acc
// @temper task vector_add
// @temper scratch acc f32 N
// @temper launch sum grid(ceil_div(N + 1, 256)) block(256) args(acc, a, b, N)
// @temper launch store grid(ceil_div(N, 256)) block(256) args(c, acc, N)

__kernel void sum(__global float *acc, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        acc[i] = a[i] + b[i];
    else if (i == N)
        acc[i] = 0.0f;
}

__kernel void store(__global float *c, __global const float *acc, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = acc[i];
}
