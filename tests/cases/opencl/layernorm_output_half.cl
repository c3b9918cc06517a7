// Wrong (tasks/L1/layernorm's note: caught): the task's baseline with each output rounded to half
// (vstore_half / vload_half), an error up to 4.9e-4 |y|: past atol 1e-3 + rtol 1e-4 |y| for
// |y| above about 2.5, at every shape with enough elements.
// @expect incorrect
// @temper task layernorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch layernorm_rows grid(R) block(BLOCK) args(y, x, gamma, beta, R, C)

/* Tree reduction of buf[0..BLOCK); returns the total to every work-item and leaves buf free. */
static float block_sum(__local float *buf, float v, int t)
{
    buf[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read buf[0] before it is reused */
    return total;
}

__kernel void layernorm_rows(__global float *y, __global const float *x, __global const float *gamma,
                             __global const float *beta, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const float *xr = x + row * C;
    __global float *yr = y + row * C;

    float s = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        s += xr[j];
    float mean = block_sum(buf, s, t) / C;

    float q = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float d = xr[j] - mean;
        q += d * d;
    }
    float rstd = rsqrt(block_sum(buf, q, t) / C + 1e-5f);

    for (int j = t; j < C; j += BLOCK)
        { ushort h; vstore_half((xr[j] - mean) * rstd * gamma[j] + beta[j], 0, (__private half *)&h); yr[j] = vload_half(0, (__private half *)&h); } /* CHANGED: through half */
}
