// Correct: softmax as a two-launch plan with a scratch buffer. The first launch writes each row's
// max and sum of exp(x - max) into scratch; the second reads them and writes y.
// @expect correct
// @temper task softmax
// @temper scratch stats f32 2*R
// @temper launch row_stats grid(R) block(64) args(stats, x, R, C)
// @temper launch scale_rows grid(ceil_div(C, 64), R) block(64) args(y, x, stats, R, C)

__kernel void row_stats(__global float *stats, __global const float *x, int R, int C)
{
    __local float m_part[64], s_part[64];
    int r = get_group_id(0), t = get_local_id(0);
    __global const float *xr = x + (size_t)r * C;
    float m = -INFINITY;
    for (int j = t; j < C; j += 64)
        m = fmax(m, xr[j]);
    m_part[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 32; s > 0; s >>= 1) {
        if (t < s)
            m_part[t] = fmax(m_part[t], m_part[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = m_part[0];
    float sum = 0;
    for (int j = t; j < C; j += 64)
        sum += exp(xr[j] - m);
    s_part[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 32; s > 0; s >>= 1) {
        if (t < s)
            s_part[t] += s_part[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) {
        stats[2 * r] = m;
        stats[2 * r + 1] = s_part[0];
    }
}

__kernel void scale_rows(__global float *y, __global const float *x, __global const float *stats, int R, int C)
{
    int j = get_global_id(0), r = get_group_id(1);
    if (j < C)
        y[(size_t)r * C + j] = exp(x[(size_t)r * C + j] - stats[2 * r]) / stats[2 * r + 1];
}
