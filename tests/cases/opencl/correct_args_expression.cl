// Correct: a launcher's arguments as integer expressions, as real launchers pass them: the
// element count `R * C` (a `long` parameter, so temper passes it as i64) and the strided chunks
// per work-item `ceil_div(C, BLOCK)` (an `int`, passed as i32). The kernel derives its row count
// from them and checks that they agree with R and C, writing NaN where they do not, so a value
// passed at the wrong width or a wrong expression is caught by the comparison.
// @expect correct
// @temper task softmax
// @temper param BLOCK 64
// @temper launch softmax_flat grid(R) block(BLOCK) args(y, x, R * C, ceil_div(C, BLOCK), R, C)

__kernel void softmax_flat(__global float *y, __global const float *x, long total, int chunks, int R, int C)
{
    __local float red[BLOCK];
    int t = get_local_id(0);
    long row = get_group_id(0);
    int cols = (int)(total / R);
    float bad = total == (long)R * C && chunks * BLOCK >= C && (chunks - 1) * BLOCK < C ? 0.0f : NAN;
    __global const float *xr = x + row * cols;
    __global float *yr = y + row * cols;

    float m = -INFINITY;
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            m = fmax(m, xr[k * BLOCK + t]);
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
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            s += exp(xr[k * BLOCK + t] - m);
    red[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BLOCK / 2; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / red[0];
    for (int k = 0; k < chunks; k++)
        if (k * BLOCK + t < cols)
            yr[k * BLOCK + t] = exp(xr[k * BLOCK + t] - m) * inv + bad;
}
