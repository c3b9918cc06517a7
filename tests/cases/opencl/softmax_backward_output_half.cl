// Wrong (tasks/L2/softmax_backward's note: rounding dx to half fails 37-70% of the elements at
// every shape up to C = 4097, in simulation): the task's baseline rounding dx to fp16.
// @expect incorrect
// @temper task softmax_backward
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_backward grid(R) block(BLOCK) args(dx, y, dy, R, C)
static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

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
        dx[off + j] = through_half(y[off + j] * (dy[off + j] - s)); /* CHANGED: dx in half */
}
