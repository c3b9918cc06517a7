// Correct (tasks/L1/softmax's note: a fast-math exp adds up to ~40 ulp, 5e-6, which rtol 2e-4
// covers): the task's baseline with native_exp (PoCL) / __expf (CUDA) for both exponentials.
// @expect correct
// @temper task softmax
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_rows grid(R) block(BLOCK) args(y, x, R, C)
__kernel void softmax_rows(__global float *y, __global const float *x, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const float *xr = x + row * C;
    __global float *yr = y + row * C;

    float m = -INFINITY;
    for (int j = t; j < C; j += BLOCK)
        m = fmax(m, xr[j]);
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
    for (int j = t; j < C; j += BLOCK)
        sum += native_exp(xr[j] - m); /* CHANGED: fast exp */
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = buf[0];

    for (int j = t; j < C; j += BLOCK)
        yr[j] = native_exp(xr[j] - m) / sum; /* CHANGED */
}
