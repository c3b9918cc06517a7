// Adapted from ggml-org/llama.cpp, ggml/src/ggml-cuda/norm.cu, rms_norm_f32<32, true>, changed as
// half-precision ports of it are (accumulating the sum of squares in __half, as a kernel written
// for F16 tensors with half math would).
// Expected: incorrect: the check shape x ~ N(0, 300), C = 1000 has a sum of squares near 9e7, past
// half's largest finite value 65504: the sum overflows to inf, the scale is 0, and every output of
// those rows is 0 instead of about +-1.
// @expect incorrect
// @temper task rmsnorm
// @temper launch rms_norm_half_accum grid(R) block(32) args(x, y, C, w)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void rms_norm_half_accum(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int ncols,
                                               const __nv_bfloat16 *mul)
{
    const int row = blockIdx.x, tid = threadIdx.x;
    x += (size_t)row * ncols;
    dst += (size_t)row * ncols;
    __half tmp = __float2half(0.0f);
    for (int col = tid; col < ncols; col += 32) {
        const __half xi = __float2half(__bfloat162float(x[col]));
        tmp = __hadd(tmp, __hmul(xi, xi));
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        tmp = __hadd(tmp, __shfl_xor_sync(0xffffffffu, tmp, offset, 32));
    const float scale = rsqrtf(__half2float(tmp) / ncols + 1e-6f);
    for (int col = tid; col < ncols; col += 32)
        dst[col] = __float2bfloat16(scale * __bfloat162float(x[col]) * __bfloat162float(mul[col]));
}
