// Wrong (tasks/L2/cross_entropy's note: caught): the task's baseline leaving the last column out
// of both reductions (loops to V - 1).
// @expect incorrect
// @temper task cross_entropy
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy grid(R) block(BLOCK) args(loss, logits, label, R, V)
__kernel void cross_entropy(__global float *loss, __global const float *logits, __global const int *label, int R,
                            int V)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const float *x = logits + row * V;

    float m = -INFINITY;
    for (int j = t; j < V - 1; j += BLOCK) /* CHANGED: last column left out */
        m = fmax(m, x[j]);
    buf[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmax(buf[t], buf[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < V - 1; j += BLOCK) /* CHANGED: last column left out */
        sum += exp(x[j] - m);
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        loss[row] = (m - x[label[row]]) + log(buf[0]);
}
