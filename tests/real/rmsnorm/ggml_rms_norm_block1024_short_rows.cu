// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/norm.cu, rms_norm_f32<1024, true> (see
// ggml_rms_norm_mul.cu), launched with 1024 threads for every row length, as a caller that skips
// rms_norm_mul_f32_cuda's dispatch (a warp for ncols < 1024) would.
// Expected: correct: the 1024-thread variant handles short rows too (threads past the row add
// nothing to the sum); the dispatch is for speed, not for correctness. Compare
// ../softmax/aten_softmax_warp_no_dispatch.cu, where skipping a dispatch is wrong.
// @expect correct
// @temper task rmsnorm
// @temper launch rms_norm_block grid(R) block(1024) args(x, y, C, w)
#include <cuda_bf16.h>

__device__ float warp_reduce_sum(float x)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, offset, 32);
    return x;
}

extern "C" __global__ void rms_norm_block(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int ncols, const __nv_bfloat16 *mul)
{
    const int row = blockIdx.x, tid = threadIdx.x;
    x += (size_t)row * ncols;
    dst += (size_t)row * ncols;
    float tmp = 0.0f;
    for (int col = tid; col < ncols; col += 1024) {
        const float xi = __bfloat162float(x[col]);
        tmp += xi * xi;
    }
    tmp = warp_reduce_sum(tmp);
    __shared__ float s_sum[32];
    if (tid % 32 == 0)
        s_sum[tid / 32] = tmp;
    __syncthreads();
    tmp = warp_reduce_sum(s_sum[tid % 32]);
    const float scale = rsqrtf(tmp / ncols + 1e-6f);
    for (int col = tid; col < ncols; col += 1024)
        dst[col] = __float2bfloat16(scale * __bfloat162float(x[col]) * __bfloat162float(mul[col]));
}
