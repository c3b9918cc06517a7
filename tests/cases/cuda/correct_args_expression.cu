// CUDA twin of tests/cases/opencl/correct_args_expression.cl, the same kernels in CUDA.
// Correct: a launcher's arguments as integer expressions, as real launchers pass them: the
// element count `R * C` (a `long` parameter, so temper passes it as i64) and the strided chunks
// per thread `ceil_div(C, BLOCK)` (an `int`, passed as i32). The kernel derives its row count
// from them and checks that they agree with R and C, writing NaN where they do not, so a value
// passed at the wrong width or a wrong expression is caught by the comparison.
// @expect correct
// @temper task softmax
// @temper param BLOCK 64
// @temper launch softmax_flat grid(R) block(BLOCK) args(y, x, R * C, ceil_div(C, BLOCK), R, C)

extern "C" __global__ void softmax_flat(float *y, const float *x, long long total, int chunks, int R, int C)
{
    __shared__ float red[BLOCK];
    int t = threadIdx.x;
    long long row = blockIdx.x;
    int cols = (int)(total / R);
    float bad = total == (long long)R * C && chunks * BLOCK >= C && (chunks - 1) * BLOCK < C ? 0.0f : NAN;
    const float *xr = x + row * cols;
    float *yr = y + row * cols;

    float m = -INFINITY;
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            m = fmaxf(m, xr[k * BLOCK + t]);
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
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            s += expf(xr[k * BLOCK + t] - m);
    red[t] = s;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            yr[k * BLOCK + t] = expf(xr[k * BLOCK + t] - m) * inv + bad;
}
