// Incorrect: softmax computed through __half (about 3 decimal digits), outside fp32 tolerance.
// @temper task softmax
// @temper launch softmax_half grid(R) block(256) args(y, x, R, C)
// @expect incorrect
#define NEG_INF __int_as_float(0xff800000) /* -inf; NVRTC has no math.h */
#include <cuda_fp16.h>

extern "C" __global__ void softmax_half(float *y, const float *x, int R, int C)
{
    __shared__ float red[256];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        sum += __half2float(hexp(__float2half(xr[j] - m)));
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    __half inv = __float2half(1.0f / red[0]);
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        yr[j] = __half2float(__hmul(hexp(__float2half(xr[j] - m)), inv));
}
