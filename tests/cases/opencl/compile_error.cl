// Wrong: vector_add that does not compile (a missing semicolon and an undeclared identifier).
// @expect compile_error
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0)
    if (i < N)
        c[i] = a[i] + b[j];
}
