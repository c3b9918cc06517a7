// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/unary.cu, op_gelu_quick (x * sigmoid(1.702 x),
// written x / (1 + exp(GELU_QUICK_COEF x)) with GELU_QUICK_COEF = -1.702), on bf16 data.
// Expected: incorrect for this task: GELU_QUICK is a different approximation (CLIP's), not the
// tanh form the task specifies; they differ by up to about 0.02 near x = -2 and 2, tens of times
// the tolerance.
// @expect incorrect
// @temper task gelu
// @temper launch unary_gelu_quick grid(ceil_div(N, 256)) block(256) args(x, y, N)
#include <cuda_bf16.h>

static __device__ __forceinline__ float op_gelu_quick(float x)
{
    const float GELU_QUICK_COEF = -1.702f;
    return x * (1.0f / (1.0f + expf(GELU_QUICK_COEF * x)));
}

extern "C" __global__ void unary_gelu_quick(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int k)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= k)
        return;
    dst[i] = __float2bfloat16(op_gelu_quick(__bfloat162float(x[i])));
}
