// Wrong (tasks/L2/cross_entropy's note: logits read through bf16 fail more than through half, which
// fails 25-60% of the rows): the task's baseline rounding every logit it reads to bf16.
// @expect incorrect
// @temper task cross_entropy
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy grid(R) block(BLOCK) args(loss, logits, label, R, V)
static float bf16_round(float f) /* CHANGED: rounds to bf16 (nearest even), kept in a float */
{
    uint u = as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return as_float(u & 0xffff0000u);
}

__kernel void cross_entropy(__global float *loss, __global const float *logits, __global const int *label, int R,
                            int V)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const float *x = logits + row * V;

    float m = -INFINITY;
    for (int j = t; j < V; j += BLOCK)
        m = fmax(m, bf16_round(x[j])); /* CHANGED: logits in bf16 */
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
    for (int j = t; j < V; j += BLOCK)
        sum += exp(bf16_round(x[j]) - m); /* CHANGED */
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        loss[row] = (m - bf16_round(x[label[row]])) /* CHANGED */ + log(buf[0]);
}
