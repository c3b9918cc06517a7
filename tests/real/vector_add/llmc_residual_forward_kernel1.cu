// Ported from karpathy/llm.c, dev/cuda/residual_forward.cu, residual_forward_kernel1 (one thread
// per element, out = inp1 + inp2, grid ceil_div(N, block)).
// Expected: correct.
// @expect correct
// @temper task vector_add
// @temper param BLOCK 256 128 512 1024
// @temper launch residual_forward_kernel1 grid(ceil_div(N, BLOCK)) block(BLOCK) args(c, a, b, N)
extern "C" __global__ void residual_forward_kernel1(float *out, const float *inp1, const float *inp2, int N)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N)
        out[idx] = inp1[idx] + inp2[idx];
}
