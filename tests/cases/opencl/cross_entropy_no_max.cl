// Wrong (tasks/L2/cross_entropy's note: without the row max subtracted every loss of the
// logits ~ N(0,1000) shape is inf or NaN): the task's baseline with the max taken as 0.
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
    for (int j = t; j < V; j += BLOCK)
        m = fmax(m, x[j]);
    buf[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmax(buf[t], buf[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = 0.0f; /* CHANGED: the row max not subtracted */
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < V; j += BLOCK)
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
