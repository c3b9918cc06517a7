// Naive baseline: one work-item per element, 256 per work-group, with a bounds check for the tail.
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
