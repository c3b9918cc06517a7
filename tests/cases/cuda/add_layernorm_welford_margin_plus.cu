// Margin case (tasks/L2/add_layernorm's note: a sequential Welford kernel is within 0.72 of the
// tolerance (simulated over 200 seeds), not half): one work-item per row, one sequential Welford
// pass (running mean and M2); h exact, y moved, each output then moved by +0.2 of the tolerance; it
// and add_layernorm_welford_margin_minus.cu pass together only if the kernel errs by at most 0.8 of
// the tolerance at every element. CUDA twin of
// tests/cases/opencl/add_layernorm_welford_margin_plus.cl.
// @expect correct
// @temper task add_layernorm
// @temper launch add_layernorm_welford grid(ceil_div(R, 64)) block(64) args(y, h, x, r, gamma, beta, R, C)
/* Margin: every output moved by +0.2 of the task's tolerance at its value,
 * atol 5e-5 + rtol 1e-4 |v|. This case and add_layernorm_welford_margin_minus.cu both pass only if the kernel's own
 * error is within 0.8 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.2f * (5e-5f + 1e-4f * fabsf(v)))

extern "C" __global__ void add_layernorm_welford(float *y, float *h, const float *x,
                                    const float *r, const float *gamma, const float *beta,
                                    int R, int C)
{
    size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (row >= (size_t)R)
        return;
    size_t off = row * C;
    float mean = 0.0f, m2 = 0.0f;
    for (int j = 0; j < C; j++) {
        float v = x[off + j] + r[off + j];
        h[off + j] = v;
        float d = v - mean;
        mean += d / (j + 1);
        m2 += d * (v - mean);
    }
    float rstd = 1.0f / sqrtf(m2 / C + 1e-5f);
    for (int j = 0; j < C; j++)
        y[off + j] = SHIFT((h[off + j] - mean) * rstd * gamma[j] + beta[j]);
}
