// Ported from pytorch/pytorch, aten/src/ATen/native/cuda/ActivationGeluKernel.cu,
// GeluCUDAKernelImpl with GeluType::Tanh (kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715,
// computed in opmath float for BFloat16), run through the vectorized elementwise loop of
// aten/src/ATen/native/cuda/CUDALoops.cuh (vectorized_elementwise_kernel: each thread handles
// 4 elements per vector when the tensors are 8-byte aligned, a scalar tail loop for the rest).
// Expected: correct.
// @expect correct
// @temper task gelu
// @temper launch vectorized_elementwise_kernel grid(ceil_div(N, 128 * 4 * 4)) block(128) args(N, y, x)
#include <cuda_bf16.h>

__device__ __forceinline__ float gelu_tanh(float x)
{
    const float kBeta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5);
    const float kKappa = 0.044715f;
    float inner = kBeta * (x + kKappa * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
}

/* elementwise_kernel_helper over 4 vectors of 4 bf16 per thread (thread_work_size 16), the last
 * block's partial tile by the unrolled bounds-checked path. */
extern "C" __global__ void vectorized_elementwise_kernel(int N, __nv_bfloat16 *out, const __nv_bfloat16 *in)
{
    const int vec = 4, per_thread = 16, block_work = 128 * per_thread;
    int remaining = N - block_work * blockIdx.x;
    const __nv_bfloat16 *src = in + (size_t)block_work * blockIdx.x;
    __nv_bfloat16 *dst = out + (size_t)block_work * blockIdx.x;
    if (remaining < block_work) { /* the tail: one element at a time, strided by the block */
        for (int k = 0; k < per_thread; k++) {
            int i = threadIdx.x + k * 128;
            if (i < remaining)
                dst[i] = __float2bfloat16(gelu_tanh(__bfloat162float(src[i])));
        }
        return;
    }
    for (int k = 0; k < per_thread / vec; k++) {
        int i = (threadIdx.x + k * 128) * vec;
        uint2 raw = *reinterpret_cast<const uint2 *>(src + i);
        __nv_bfloat16 v[4];
        memcpy(v, &raw, 8);
        for (int j = 0; j < vec; j++)
            v[j] = __float2bfloat16(gelu_tanh(__bfloat162float(v[j])));
        memcpy(&raw, v, 8);
        *reinterpret_cast<uint2 *>(dst + i) = raw;
    }
}
