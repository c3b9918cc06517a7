// Margin case (tasks/L2/softmax_backward's note: the baseline is within 0.41 of the tolerance (2000
// simulated seeds)): the task's baseline (a tree sum of y * dy per row), each output then moved by
// -0.4 of the tolerance; it and softmax_backward_baseline_margin_plus.cl pass together only if the
// kernel errs by at most 0.6 of the tolerance at every element.
// @expect correct
// @temper task softmax_backward
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_backward grid(R) block(BLOCK) args(dx, y, dy, R, C)
/* CHANGED (margin case): every output moved by -0.4 of the task's tolerance at its value,
 * atol 5e-8 + rtol 1e-4 |v|. This case and softmax_backward_baseline_margin_plus.cl both pass only if the kernel's own
 * error is within 0.6 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) - 0.4f * (5e-8f + 1e-4f * fabs(v)))

__kernel void softmax_backward(__global float *dx, __global const float *y, __global const float *dy, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t off = get_group_id(0) * (size_t)C;

    float s = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        s += y[off + j] * dy[off + j];
    buf[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h /= 2) {
        if (t < h)
            buf[t] += buf[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    s = buf[0];

    for (int j = t; j < C; j += BLOCK)
        dx[off + j] = SHIFT(y[off + j] * (dy[off + j] - s)); /* CHANGED: moved */
}
