// Wrong: vector_add that never writes the last element of c (the bound is N - 1, not N), so
// that element keeps whatever was in the buffer: the poison (NaN) under the harness.
// @expect incorrect
// @expect-keep-going 13   (every check shape with both seeds but the two past 65,536 with the secret seed only, as on a CPU device, and the bench shape; with keep_going)
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N - 1)
        c[i] = a[i] + b[i];
}
