// CUDA twin of tests/cases/opencl/do_nothing.cl. Wrong: a vector_add kernel with an empty body. c
// keeps whatever the harness left in it (the NaN poison, not a previous run's correct output).
// @expect incorrect
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
extern "C" __global__ void add(float *c, const float *a, const float *b, int N)
{
}
