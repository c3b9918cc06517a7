// CUDA twin of tests/cases/opencl/args_i32_overflow.cl, the same kernels in CUDA.
// Wrong: passes `R * C * 100000` to an `int` parameter. It fits at the first shapes (the kernel
// ignores it and is otherwise correct), but at R = 33, C = 4097 it is 13,520,100,000, past
// INT32_MAX: temper refuses to truncate it in silence and names the expression and its value.
// @expect invalid
// @expect-message does not fit
// @temper task softmax
// @temper launch softmax_rows grid(R) block(1) args(y, x, R, C, R * C * 100000)

extern "C" __global__ void softmax_rows(float *y, const float *x, int R, int C, int unused)
{
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float m = -INFINITY, s = 0.0f;
    for (int j = 0; j < C; j++)
        m = fmaxf(m, xr[j]);
    for (int j = 0; j < C; j++)
        s += expf(xr[j] - m);
    for (int j = 0; j < C; j++)
        yr[j] = expf(xr[j] - m) / s;
}
