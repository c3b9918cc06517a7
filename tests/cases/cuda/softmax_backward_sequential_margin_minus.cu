// Margin case (tasks/L2/softmax_backward's note: a sequential kernel stays within 0.55 of the
// tolerance in simulation): one work-item per row summing y * dy in one sequential chain, each
// output then moved by -0.4 of the tolerance; it and softmax_backward_sequential_margin_plus.cu
// pass together only if the kernel errs by at most 0.6 of the tolerance at every element. CUDA twin
// of tests/cases/opencl/softmax_backward_sequential_margin_minus.cl.
// @expect correct
// @temper task softmax_backward
// @temper launch softmax_backward_seq grid(ceil_div(R, 64)) block(64) args(dx, y, dy, R, C)
/* Margin: every output moved by -0.4 of the task's tolerance at its value,
 * atol 5e-8 + rtol 1e-4 |v|. This case and softmax_backward_sequential_margin_plus.cu both pass only if the kernel's own
 * error is within 0.6 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) - 0.4f * (5e-8f + 1e-4f * fabsf(v)))

extern "C" __global__ void softmax_backward_seq(float *dx, const float *y, const float *dy, int R, int C)
{
    size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (row >= (size_t)R)
        return;
    size_t off = row * C;
    float s = 0.0f;
    for (int j = 0; j < C; j++)
        s += y[off + j] * dy[off + j];
    for (int j = 0; j < C; j++)
        dx[off + j] = SHIFT(y[off + j] * (dy[off + j] - s));
}
