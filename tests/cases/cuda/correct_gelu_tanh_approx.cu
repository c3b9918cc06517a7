// Correct: GELU with the hardware tanh.approx.f32 through inline PTX, as fast-math GELUs do,
// rounded once to nearest bf16. tasks/L1/gelu's note once said this is caught at 15x the
// tolerance, reading tanh.approx's documented 2^-11 relative error bound as its error near -1.
// Measured on an H200 over every bf16 x in [-100, 100] (tests/gpu/gelu_tanh_approx_probe.cu): its
// absolute error is at most 7.1e-6 (9.1e-8 at x = -3, where the bound would allow 4.9e-4), and
// this GELU uses at most 0.76 of the tolerance; its largest absolute error, 0.0078 at x = 2.08,
// is the bf16 rounding of y = 2.04 that every correct kernel has. So it passes, and the note is
// corrected.
// @expect correct
// @temper task gelu
// @temper launch gelu_approx grid(ceil_div(N, 256)) block(256) args(y, x, N)
#include <cuda_bf16.h>

__device__ float tanh_approx(float z)
{
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(z));
    return t;
}

extern "C" __global__ void gelu_approx(__nv_bfloat16 *y, const __nv_bfloat16 *x, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    float v = __bfloat162float(x[i]);
    float z = 0.7978845608f * (v + 0.044715f * v * v * v);
    y[i] = __float2bfloat16_rn(0.5f * v * (1.0f + tanh_approx(z)));
}
