// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/unary.cu, op_gelu / gelu_f32 (one thread per
// element: 0.5 x (1 + tanhf(SQRT_2_OVER_PI x (1 + GELU_COEF_A x^2)))), on the task's bf16 data
// (ggml's unary ops run on F32, F16 and BF16 tensors alike, in float).
// Expected: correct: the same function as the task's, factored as x (1 + a x^2).
// @expect correct
// @temper task gelu
// @temper launch unary_gelu grid(ceil_div(N, 256)) block(256) args(x, y, N)
#include <cuda_bf16.h>

static __device__ __forceinline__ float op_gelu(float x)
{
    const float GELU_COEF_A = 0.044715f;
    const float SQRT_2_OVER_PI = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

extern "C" __global__ void unary_gelu(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int k)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i >= k)
        return;
    dst[i] = __float2bfloat16(op_gelu(__bfloat162float(x[i])));
}
