// CUDA twin of tests/cases/opencl/missing_kernel.cl. Wrong: the launch names kernel "vector_add",
// but the source defines only "vec_add". The source compiles; the launch plan refers to nothing
// (cuModuleGetFunction finds no such kernel). Verdict invalid.
// @expect invalid
// @expect-message kernel
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
extern "C" __global__ void vec_add(float *c, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i];
}
