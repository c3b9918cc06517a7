// Wrong (tasks/L1/layernorm's note: the one-pass E[x^2] - E[x]^2 in fp32 fails the N(100, 1)
// shape 3-6x over the tolerance): the task's baseline with the variance as the mean of squares
// minus the squared mean, the form of llm.c's layernorm_forward_kernel4 and ggml-cuda's norm_f32
// (tests/real/layernorm/).
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
        float d = xr[j]; /* CHANGED: raw squares */
        q += d * d;
    }
    float rstd = rsqrt(block_sum(buf, q, t) / C - mean * mean + 1e-5f); /* CHANGED: E[x^2] - mean^2 */

    for (int j = t; j < C; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
