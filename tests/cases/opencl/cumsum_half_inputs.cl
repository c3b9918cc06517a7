// Wrong (tasks/L1/cumsum's note: caught): the task's baseline reading its inputs rounded to half
// (relative error up to 2^-11 per element), 5-280x the tolerance in the sums.
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
    for (int c0 = 0; c0 < C; c0 += BLOCK) {
        int j = c0 + t;
        float v = 0.0f; if (j < C) { ushort h; vstore_half(xr[j], 0, (__private half *)&h); v = vload_half(0, (__private half *)&h); } /* CHANGED: half inputs */
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
