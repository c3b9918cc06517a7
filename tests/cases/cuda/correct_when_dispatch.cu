// CUDA twin of tests/cases/opencl/correct_when_dispatch.cl, the same kernels in CUDA.
// Correct: dispatch by shape, as real launchers do: rows of at most 256 go to rows_short (one
// thread per element), longer rows to rows_long (a strided loop). Each kernel is right only
// for its own rows (rows_short leaves elements past 256 unwritten; rows_long writes nothing for
// short rows), so every check shape passes only if its row length takes the right group.
// @expect correct
// @temper task softmax
// @temper launch rows_short grid(R) block(256) args(y, x, R, C) when(C <= 256)
// @temper launch rows_long grid(R) block(256) args(y, x, R, C) when(1)

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
