// CUDA twin of tests/cases/opencl/correct_persistent_sms.cl, the same kernels in CUDA.
// Correct: a persistent kernel whose grid is sized from the device, as launchers do with the SM
// count: grid(2 * SMS) blocks (SMS is the device's multiprocessor count: 132 on an H200) loop
// over the rows. The kernel is also given SMS as an argument and writes NaN unless the grid it
// runs in is 2 * SMS groups, so the attribute must reach grid(...) and args(...) alike.
// @expect correct
// @temper task softmax
// @temper param BLOCK 64
// @temper launch softmax_persistent grid(2 * SMS) block(BLOCK) args(y, x, R, C, SMS)

extern "C" __global__ void softmax_persistent(float *y, const float *x, int R, int C, int sms)
{
    __shared__ float red[BLOCK];
    int t = threadIdx.x;
    float bad = gridDim.x == (size_t)(2 * sms) && sms > 0 ? 0.0f : NAN;
    for (int row = blockIdx.x; row < R; row += gridDim.x) {
        const float *xr = x + (size_t)row * C;
        float *yr = y + (size_t)row * C;
        float m = -INFINITY;
        for (int j = t; j < C; j += BLOCK)
            m = fmaxf(m, xr[j]);
        red[t] = m;
        __syncthreads();
        for (int h = BLOCK / 2; h > 0; h /= 2) {
            if (t < h)
                red[t] = fmaxf(red[t], red[t + h]);
            __syncthreads();
        }
        m = red[0];
        __syncthreads();
        float s = 0.0f;
        for (int j = t; j < C; j += BLOCK)
            s += expf(xr[j] - m);
        red[t] = s;
        __syncthreads();
        for (int h = BLOCK / 2; h > 0; h /= 2) {
            if (t < h)
                red[t] += red[t + h];
            __syncthreads();
        }
        float inv = 1.0f / red[0];
        __syncthreads(); /* red is reused by the next row */
        for (int j = t; j < C; j += BLOCK)
            yr[j] = expf(xr[j] - m) * inv + bad;
    }
}
