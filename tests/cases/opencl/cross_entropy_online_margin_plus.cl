// Margin case (tasks/L2/cross_entropy's note: online kernels pass at half the tolerance): one work-
// item per row, one pass of online softmax (a running max, the running sum rescaled when it grows),
// each output then moved by +0.5 of the tolerance; it and cross_entropy_online_margin_minus.cl pass
// together only if the kernel errs by at most 0.5 of the tolerance at every element.
// @expect correct
// @temper task cross_entropy
// @temper launch cross_entropy_online grid(ceil_div(R, 64)) block(64) args(loss, logits, label, R, V)
/* Margin: every output moved by +0.5 of the task's tolerance at its value,
 * atol 1e-3 + rtol 1e-5 |v|. This case and cross_entropy_online_margin_minus.cl both pass only if the kernel's own
 * error is within 0.5 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.5f * (1e-3f + 1e-5f * fabs(v)))

__kernel void cross_entropy_online(__global float *loss, __global const float *logits, __global const int *label,
                                   int R, int V)
{
    size_t row = get_global_id(0);
    if (row >= (size_t)R)
        return;
    __global const float *x = logits + row * V;
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < V; j++) {
        float v = x[j];
        if (v > m) {
            sum = sum * exp(m - v) + 1.0f;
            m = v;
        } else {
            sum += exp(v - m);
        }
    }
    loss[row] = SHIFT((m - x[label[row]]) + log(sum));
}
