// Margin case (tasks/L2/cross_entropy's note: a sequential kernel errs by up to half the tolerance on the H200): one
// work-item per row, two passes (the max, then the sum of exp(x - max) in one sequential chain),
// each output then moved by +0.25 of the tolerance; it and cross_entropy_sequential_margin_minus.cu
// pass together only if the kernel errs by at most 0.75 of the tolerance at every element. CUDA twin
// of tests/cases/opencl/cross_entropy_sequential_margin_plus.cl.
// @expect correct
// @temper task cross_entropy
// @temper launch cross_entropy_seq grid(ceil_div(R, 64)) block(64) args(loss, logits, label, R, V)
/* Margin: every output moved by +0.25 of the task's tolerance at its value,
 * atol 1e-3 + rtol 1e-5 |v|. This case and cross_entropy_sequential_margin_minus.cu both pass only if the kernel's own
 * error is within 0.75 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.25f * (1e-3f + 1e-5f * fabsf(v)))

extern "C" __global__ void cross_entropy_seq(float *loss, const float *logits, const int *label,
                                int R, int V)
{
    size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (row >= (size_t)R)
        return;
    const float *x = logits + row * V;
    float m = -INFINITY;
    for (int j = 0; j < V; j++)
        m = fmaxf(m, x[j]);
    float sum = 0.0f;
    for (int j = 0; j < V; j++)
        sum += expf(x[j] - m);
    loss[row] = SHIFT((m - x[label[row]]) + logf(sum));
}
