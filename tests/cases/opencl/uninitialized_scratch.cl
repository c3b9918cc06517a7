// Wrong: a two-launch vector_add that accumulates into a scratch buffer it never clears, as if
// scratch started zeroed (or kept the last call's values). The harness poisons scratch before
// every run, so the sums are NaN.
// @expect incorrect
// @expect-message nan
// @temper task vector_add
// @temper scratch acc f32 N
// @temper launch accumulate grid(ceil_div(N, 256)) block(256) args(acc, a, b, N)
// @temper launch store grid(ceil_div(N, 256)) block(256) args(c, acc, N)

__kernel void accumulate(__global float *acc, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        acc[i] += a[i] + b[i];
}

__kernel void store(__global float *c, __global const float *acc, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = acc[i];
}
