// Wrong: a vector_add kernel with an empty body. c keeps whatever the harness left in it (the
// NaN poison, not a previous run's correct output).
// @expect incorrect
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
}
