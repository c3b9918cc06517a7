// Ported from karpathy/llm.c, dev/cuda/gelu_forward.cu, gelu_forward_kernel1 (one thread per
// element: 0.5 x (1 + tanhf(sqrt(2/pi) (x + 0.044715 x^3)))), on the task's bf16 data: read as
// float, computed in fp32, rounded once to nearest bf16, as llm.c's floatX = bf16 builds do.
// Expected: correct.
// @expect correct
// @temper task gelu
// @temper launch gelu_forward_kernel1 grid(ceil_div(N, 128)) block(128) args(y, x, N)
#include <cuda_bf16.h>

#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

extern "C" __global__ void gelu_forward_kernel1(__nv_bfloat16 *out, const __nv_bfloat16 *inp, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float xi = __bfloat162float(inp[i]);
        float cube = 0.044715f * xi * xi * xi;
        out[i] = __float2bfloat16(0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube))));
    }
}
