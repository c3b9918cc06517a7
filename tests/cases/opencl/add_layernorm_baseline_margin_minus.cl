// Margin case (tasks/L2/add_layernorm's note: two-pass and Welford kernels, tree or sequential,
// pass at half the tolerance): the task's baseline (two passes, tree sums; h written exactly, y
// moved), each output then moved by -0.5 of the tolerance; it and
// add_layernorm_baseline_margin_plus.cl pass together only if the kernel errs by at most 0.5 of the
// tolerance at every element.
// @expect correct
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

/* CHANGED (margin case): every output moved by -0.5 of the task's tolerance at its value,
 * atol 5e-5 + rtol 1e-4 |v|. This case and add_layernorm_baseline_margin_plus.cl both pass only if the kernel's own
 * error is within 0.5 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) - 0.5f * (5e-5f + 1e-4f * fabs(v)))

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
        y[off + j] = SHIFT((h[off + j] - mean) * rstd * gamma[j] + beta[j]); /* CHANGED: moved */
}
