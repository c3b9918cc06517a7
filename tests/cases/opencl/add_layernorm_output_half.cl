// Wrong (tasks/L2/add_layernorm's note: rounding y to half fails about 40% of the elements at every
// ordinary shape): the task's baseline rounding y to fp16.
// @expect incorrect
// @temper task add_layernorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch add_layernorm grid(R) block(BLOCK) args(y, h, x, r, gamma, beta, R, C)

/* Sums v over the work-group; every work-item gets the total. */
static float block_sum(__local float *buf, float v)
{
    int t = get_local_id(0);
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

static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void add_layernorm(__global float *y, __global float *h, __global const float *x,
                            __global const float *r, __global const float *gamma, __global const float *beta,
                            int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t off = get_group_id(0) * (size_t)C;

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float v = x[off + j] + r[off + j];
        h[off + j] = v;
        sum += v;
    }
    float mean = block_sum(buf, sum) / C;

    float sq = 0.0f;
    for (int j = t; j < C; j += BLOCK) { /* reads back only what this work-item wrote */
        float d = h[off + j] - mean;
        sq += d * d;
    }
    float rstd = 1.0f / sqrt(block_sum(buf, sq) / C + 1e-5f);

    for (int j = t; j < C; j += BLOCK)
        y[off + j] = through_half((h[off + j] - mean) * rstd * gamma[j] + beta[j]); /* CHANGED: y in half */
}
