// CUDA twin of tests/cases/opencl/correct_softmax_fast_exp.cl (tasks/L1/softmax's note: a fast exp passes): the task's naive.cu with the change
// marked CHANGED.
// @expect correct
// @temper task softmax
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_rows grid(R) block(BLOCK) args(y, x, R, C)
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
        sum += __expf(xr[j] - m); /* CHANGED: fast exp */
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    sum = buf[0];

    for (int j = t; j < C; j += BLOCK)
        yr[j] = __expf(xr[j] - m) / sum; /* CHANGED */
}
