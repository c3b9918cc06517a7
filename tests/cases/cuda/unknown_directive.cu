// CUDA twin of tests/cases/opencl/unknown_directive.cl. Wrong: a misspelt directive ("lanch"). An
// unknown directive is an error, not a comment: the candidate is invalid rather than run without
// a launch plan or with a guessed one.
// @expect invalid
// @expect-message unknown
// @temper task vector_add
// @temper lanch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
extern "C" __global__ void add(float *c, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
