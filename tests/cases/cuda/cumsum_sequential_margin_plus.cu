// Margin case (tasks/L1/cumsum's note: rtol 5e-5 admits the longest sequential chain with about a
// 3x margin): one work-item per row, one running fp32 sum, each output then moved by +0.6 of the
// tolerance; it and cumsum_sequential_margin_minus.cu pass together only if the kernel errs by at
// most 0.4 of the tolerance at every element. CUDA twin of
// tests/cases/opencl/cumsum_sequential_margin_plus.cl.
// @expect correct
// @temper task cumsum
// @temper launch cumsum_seq grid(ceil_div(R, 64)) block(64) args(y, x, R, C)
/* Margin: every output moved by +0.6 of the task's tolerance at its value,
 * atol 1e-6 + rtol 5e-5 |v|. This case and cumsum_sequential_margin_minus.cu both pass only if the kernel's own
 * error is within 0.4 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.6f * (1e-6f + 5e-5f * fabsf(v)))

extern "C" __global__ void cumsum_seq(float *y, const float *x, int R, int C)
{
    size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (row >= (size_t)R)
        return;
    float acc = 0.0f;
    for (int j = 0; j < C; j++) {
        acc += x[row * C + j];
        y[row * C + j] = SHIFT(acc);
    }
}
