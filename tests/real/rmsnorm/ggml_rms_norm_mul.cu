// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/norm.cu, rms_norm_f32<block_size,
// do_multiply = true> (one block per row: sum of squares by warp shuffles, across warps through
// shared memory for 1024 threads; dst = rsqrtf(mean + eps) * x * mul), dispatched as
// rms_norm_mul_f32_cuda does: a warp per row when ncols < 1024, else 1024 threads; on the task's
// bf16 tensors, read as float and rounded once on the store, eps 1e-6.
// Expected: correct.
// @expect correct
// @temper task rmsnorm
// @temper launch rms_norm_warp grid(R) block(32) args(x, y, C, w) when(C < 1024)
// @temper launch rms_norm_block grid(R) block(1024) args(x, y, C, w) when(1)
#include <cuda_bf16.h>

__device__ float warp_reduce_sum(float x)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, offset, 32);
    return x;
}

template <int block_size>
__device__ void rms_norm_f32(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int ncols, const __nv_bfloat16 *mul)
{
    const int row = blockIdx.x, tid = threadIdx.x;
    x += (size_t)row * ncols;
    dst += (size_t)row * ncols;
    float tmp = 0.0f;
    for (int col = tid; col < ncols; col += block_size) {
        const float xi = __bfloat162float(x[col]);
        tmp += xi * xi;
    }
    tmp = warp_reduce_sum(tmp);
    if (block_size > 32) {
        __shared__ float s_sum[32];
        if (tid % 32 == 0)
            s_sum[tid / 32] = tmp;
        __syncthreads();
        tmp = warp_reduce_sum(s_sum[tid % 32]);
    }
    const float scale = rsqrtf(tmp / ncols + 1e-6f);
    for (int col = tid; col < ncols; col += block_size)
        dst[col] = __float2bfloat16(scale * __bfloat162float(x[col]) * __bfloat162float(mul[col]));
}

extern "C" __global__ void rms_norm_warp(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int ncols, const __nv_bfloat16 *mul)
{
    rms_norm_f32<32>(x, dst, ncols, mul);
}

extern "C" __global__ void rms_norm_block(const __nv_bfloat16 *x, __nv_bfloat16 *dst, int ncols, const __nv_bfloat16 *mul)
{
    rms_norm_f32<1024>(x, dst, ncols, mul);
}
