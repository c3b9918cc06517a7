// Correct: a persistent kernel whose grid is sized from the device, as launchers do with the SM
// count: grid(2 * SMS) work-groups (SMS is the device's compute units: 2 on a 2-core PoCL) loop
// over the rows. The kernel is also given SMS as an argument and writes NaN unless the grid it
// runs in is 2 * SMS groups, so the attribute must reach grid(...) and args(...) alike.
// @expect correct
// @temper task softmax
// @temper param BLOCK 64
// @temper launch softmax_persistent grid(2 * SMS) block(BLOCK) args(y, x, R, C, SMS)

__kernel void softmax_persistent(__global float *y, __global const float *x, int R, int C, int sms)
{
    __local float red[BLOCK];
    int t = get_local_id(0);
    float bad = get_num_groups(0) == (size_t)(2 * sms) && sms > 0 ? 0.0f : NAN;
    for (int row = get_group_id(0); row < R; row += get_num_groups(0)) {
        __global const float *xr = x + (size_t)row * C;
        __global float *yr = y + (size_t)row * C;
        float m = -INFINITY;
        for (int j = t; j < C; j += BLOCK)
            m = fmax(m, xr[j]);
        red[t] = m;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = BLOCK / 2; h > 0; h /= 2) {
            if (t < h)
                red[t] = fmax(red[t], red[t + h]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        m = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        float s = 0.0f;
        for (int j = t; j < C; j += BLOCK)
            s += exp(xr[j] - m);
        red[t] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = BLOCK / 2; h > 0; h /= 2) {
            if (t < h)
                red[t] += red[t + h];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        float inv = 1.0f / red[0];
        barrier(CLK_LOCAL_MEM_FENCE); /* red is reused by the next row */
        for (int j = t; j < C; j += BLOCK)
            yr[j] = exp(xr[j] - m) * inv + bad;
    }
}
