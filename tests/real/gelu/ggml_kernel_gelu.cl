// Ported from ggml-org/llama.cpp, ggml/src/ggml-opencl/kernels/gelu.cl, kernel_gelu (one work-item
// per element, 0.5 x (1 + tanh(SQRT_2_OVER_PI x (1 + GELU_COEF_A x^2))), launched with exactly n
// work-items as ggml does, so no bounds check), on the task's bf16 data, rounded once to nearest.
// Expected: correct.
// @expect correct
// @temper task gelu
// @temper launch kernel_gelu grid(N) block(1) args(x, y)
#define GELU_COEF_A 0.044715f
#define SQRT_2_OVER_PI 0.79788456080286535587989211986876f

__kernel void kernel_gelu(__global const ushort *src0, __global ushort *dst)
{
    float x = as_float((uint)src0[get_global_id(0)] << 16);
    float y = 0.5f * x * (1.0f + tanh(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
    uint u = as_uint(y);
    u += 0x7fffu + ((u >> 16) & 1u);
    dst[get_global_id(0)] = (ushort)(u >> 16);
}
