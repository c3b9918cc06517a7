// Wrong (tasks/L1/cumsum's note: a skipped tail is caught by the NaN poison): the task's baseline
// walking only whole chunks of BLOCK elements, so that a row's last partial chunk is never written.
// @expect incorrect
// @temper task cumsum
// @temper param BLOCK 256
// @temper launch cumsum_rows grid(R) block(BLOCK) args(y, x, R, C)
__kernel void cumsum_rows(__global float *y, __global const float *x, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const float *xr = x + row * C;
    __global float *yr = y + row * C;

    float carry = 0.0f;
    for (int c0 = 0; c0 + BLOCK <= C; c0 += BLOCK) { /* CHANGED: whole chunks only */
        int j = c0 + t;
        float v = j < C ? xr[j] : 0.0f;
        buf[t] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = 1; off < BLOCK; off *= 2) {
            float add = t >= off ? buf[t - off] : 0.0f;
            barrier(CLK_LOCAL_MEM_FENCE); /* every read of this step is done before the writes */
            v += add;
            buf[t] = v;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (j < C)
            yr[j] = carry + v;
        carry += buf[BLOCK - 1];
        barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read the total before the next chunk */
    }
}
