// CUDA twin of tests/cases/opencl/when_no_group.cl, the same kernels in CUDA.
// Wrong: no launch group covers every shape: rows_long only when(C > 256), and nothing for
// shorter rows. temper does not skip the launch in silence: no group's condition holding is the
// candidate's error.
// @expect invalid
// @expect-message no launch group
// @temper task softmax
// @temper launch rows_long grid(R) block(256) args(y, x, R, C) when(C > 256)

/* Short rows: one thread per element, so only rows of at most 256 are covered. */
extern "C" __global__ void rows_short(float *y, const float *x, int R, int C)
{
    __shared__ float red[256];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float v = t < C ? xr[t] : -INFINITY;
    red[t] = v;
    __syncthreads();
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] = fmaxf(red[t], red[t + h]);
        __syncthreads();
    }
    float m = red[0];
    __syncthreads();
    float e = t < C ? expf(v - m) : 0.0f;
    red[t] = e;
    __syncthreads();
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        __syncthreads();
    }
    if (t < C)
        yr[t] = e / red[0];
}

/* Long rows: a strided loop; deliberately writes nothing for rows of 256 or fewer, so that a
 * short row sent here is caught. */
extern "C" __global__ void rows_long(float *y, const float *x, int R, int C)
{
    __shared__ float red[256];
    int t = threadIdx.x;
    if (C <= 256)
        return;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float m = -INFINITY;
    for (int j = t; j < C; j += 256)
        m = fmaxf(m, xr[j]);
    red[t] = m;
    __syncthreads();
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] = fmaxf(red[t], red[t + h]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int j = t; j < C; j += 256)
        s += expf(xr[j] - m);
    red[t] = s;
    __syncthreads();
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int j = t; j < C; j += 256)
        yr[j] = expf(xr[j] - m) * inv;
}
