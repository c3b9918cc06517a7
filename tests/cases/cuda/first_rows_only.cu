// Wrong, but only past 4096 rows: softmax with one block per row and the grid capped at 4096
// blocks, no loop over further rows, so rows 4096 and up are never written. Every check
// shape once had at most 257 rows and the CPU bench shape has 1024, so on a CPU it was judged
// correct; the check shape R = 65537 (each size parameter passes 65,536 in some check shape)
// leaves NaN poison in the unwritten rows.
// @expect incorrect
// @expect-message never written
// @temper task softmax
// @temper param BLOCK 256
// @temper launch softmax_rows grid(min(R, 4096)) block(BLOCK) args(y, x, R, C)
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
