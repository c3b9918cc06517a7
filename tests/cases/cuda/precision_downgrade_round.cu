// CUDA twin of tests/cases/opencl/precision_downgrade_round.cl (tasks/L1/softmax's note: rounding
// exp results to half's significand fails about a third of the elements): the task's naive.cu
// with each expf(x - max) rounded to a 10-bit mantissa (half's precision, fp32's range) by bit
// masking, the smallest error a half-precision kernel makes: at most 4.9e-4 relative per element,
// nothing flushed to zero, past rtol 2e-4 on many elements. The change is marked CHANGED.
// @expect incorrect
// @temper task softmax
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_rows grid(R) block(BLOCK) args(y, x, R, C)
/* v rounded to nearest with 10 explicit mantissa bits (13 low bits cleared) */
__device__ __forceinline__ float round10(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xFFFFE000u);
}

extern "C" __global__ void softmax_rows(float *y, const float *x, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float m = -__int_as_float(0x7f800000); /* -inf; NVRTC has no INFINITY macro */
    for (int j = t; j < C; j += BLOCK)
        m = fmaxf(m, xr[j]);
    buf[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmaxf(buf[t], buf[t + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads(); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        sum += round10(expf(xr[j] - m)); /* CHANGED: rounded to 10 bits */
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    sum = buf[0];

    for (int j = t; j < C; j += BLOCK)
        yr[j] = round10(expf(xr[j] - m)) / sum; /* CHANGED */
}
