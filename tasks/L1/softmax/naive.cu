// Naive baseline: one block per row. Each thread strides over the row, then a shared-memory
// tree reduction gives the row max, a second one the sum of exp(x - max).
// BLOCK (a power of two) is the block size.
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
        sum += expf(xr[j] - m);
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    sum = buf[0];

    for (int j = t; j < C; j += BLOCK)
        yr[j] = expf(xr[j] - m) / sum;
}
