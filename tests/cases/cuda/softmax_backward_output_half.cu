// CUDA twin of tests/cases/opencl/softmax_backward_output_half.cl (tasks/L2/softmax_backward's note: dx in half is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task softmax_backward
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_backward grid(R) block(BLOCK) args(dx, y, dy, R, C)
#include <cuda_fp16.h>

__device__ __forceinline__ float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    return __half2float(__float2half_rn(f));
}

extern "C" __global__ void softmax_backward(float *dx, const float *y, const float *dy, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    size_t off = (size_t)blockIdx.x * C;

    float s = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        s += y[off + j] * dy[off + j];
    buf[t] = s;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h /= 2) {
        if (t < h)
            buf[t] += buf[t + h];
        __syncthreads();
    }
    s = buf[0];

    for (int j = t; j < C; j += BLOCK)
        dx[off + j] = through_half(y[off + j] * (dy[off + j] - s)); /* CHANGED: dx in half */
}
