// Wrong for this task (tasks/L1/gelu's note: caught): the exact-erf GELU, 0.5 x (1 + erf(x / sqrt 2)),
// instead of the task's tanh approximation: 11% apart at x = -3, about ten times the tolerance
// there (atol 2e-5 + rtol 5e-3 |y|). The OpenCL twin is tests/cases/opencl/gelu_exact_erf.cl.
// @expect incorrect
// @temper task gelu
// @temper launch gelu_erf grid(ceil_div(N, 256)) block(256) args(y, x, N)
#include <cuda_bf16.h>

extern "C" __global__ void gelu_erf(__nv_bfloat16 *y, const __nv_bfloat16 *x, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float v = __bfloat162float(x[i]);
        y[i] = __float2bfloat16_rn(0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2)));
    }
}
