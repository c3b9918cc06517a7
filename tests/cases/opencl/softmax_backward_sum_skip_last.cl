// Wrong (tasks/L2/softmax_backward's note: leaving one element out of the sum fails at the small
// shapes): the task's baseline summing y * dy over all but the last element of the row.
// @expect incorrect
// @temper task softmax_backward
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_backward grid(R) block(BLOCK) args(dx, y, dy, R, C)
__kernel void softmax_backward(__global float *dx, __global const float *y, __global const float *dy, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t off = get_group_id(0) * (size_t)C;

    float s = 0.0f;
    for (int j = t; j < C - 1; j += BLOCK) /* CHANGED: the last element left out */
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
        dx[off + j] = y[off + j] * (dy[off + j] - s);
}
