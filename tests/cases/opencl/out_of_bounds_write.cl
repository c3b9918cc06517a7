// Wrong: vector_add with an off-by-one bound (i <= N): the work-item i == N writes c[N], one
// element past the end of the output (and reads a[N], b[N]). Every element of c is right; the
// guard zone after c is overwritten.
// @expect incorrect
// @expect-message guard
// @temper task vector_add
// @temper launch add grid(ceil_div(N + 1, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i <= N)
        c[i] = a[i] + b[i];
}
