// Margin case (tasks/L1/layernorm's note: one sequential chain per row passes with a 1.6x margin at
// atol 1e-3): one work-item per row, two passes in sequential chains (the mean, then the sum of (x
// - mean)^2), each output then moved by +0.375 of the tolerance; it and
// layernorm_sequential_margin_minus.cu pass together only if the kernel errs by at most 0.625 of
// the tolerance at every element. CUDA twin of
// tests/cases/opencl/layernorm_sequential_margin_plus.cl.
// @expect correct
// @temper task layernorm
// @temper launch layernorm_seq grid(ceil_div(R, 64)) block(64) args(y, x, gamma, beta, R, C)
/* Margin: every output moved by +0.375 of the task's tolerance at its value,
 * atol 1e-3 + rtol 1e-4 |v|. This case and layernorm_sequential_margin_minus.cu both pass only if the kernel's own
 * error is within 0.625 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.375f * (1e-3f + 1e-4f * fabsf(v)))

extern "C" __global__ void layernorm_seq(float *y, const float *x, const float *gamma,
                            const float *beta, int R, int C)
{
    size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (row >= (size_t)R)
        return;
    const float *xr = x + row * C;
    float sum = 0.0f;
    for (int j = 0; j < C; j++)
        sum += xr[j];
    float mean = sum / C, sq = 0.0f;
    for (int j = 0; j < C; j++) {
        float d = xr[j] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(sq / C + 1e-5f);
    for (int j = 0; j < C; j++)
        y[row * C + j] = SHIFT((xr[j] - mean) * rstd * gamma[j] + beta[j]);
}
