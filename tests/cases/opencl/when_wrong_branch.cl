// Wrong: the dispatch of correct_when_dispatch.cl with its condition reversed: long rows go to
// rows_short, which covers only the first 256 elements of a row, and short rows fall through to
// rows_long, which writes nothing for them. The unwritten elements keep their NaN poison.
// @expect incorrect
// @temper task softmax
// @temper launch rows_short grid(R) block(256) args(y, x, R, C) when(C > 256)
// @temper launch rows_long grid(R) block(256) args(y, x, R, C) when(1)

/* Short rows: one work-item per element, so only rows of at most 256 are covered. */
__kernel void rows_short(__global float *y, __global const float *x, int R, int C)
{
    __local float red[256];
    int t = get_local_id(0);
    __global const float *xr = x + (size_t)get_group_id(0) * C;
    __global float *yr = y + (size_t)get_group_id(0) * C;
    float v = t < C ? xr[t] : -INFINITY;
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] = fmax(red[t], red[t + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float e = t < C ? exp(v - m) : 0.0f;
    red[t] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t < C)
        yr[t] = e / red[0];
}

/* Long rows: a strided loop; deliberately writes nothing for rows of 256 or fewer, so that a
 * short row sent here is caught. */
__kernel void rows_long(__global float *y, __global const float *x, int R, int C)
{
    __local float red[256];
    int t = get_local_id(0);
    if (C <= 256)
        return;
    __global const float *xr = x + (size_t)get_group_id(0) * C;
    __global float *yr = y + (size_t)get_group_id(0) * C;
    float m = -INFINITY;
    for (int j = t; j < C; j += 256)
        m = fmax(m, xr[j]);
    red[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] = fmax(red[t], red[t + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = 0.0f;
    for (int j = t; j < C; j += 256)
        s += exp(xr[j] - m);
    red[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 128; h > 0; h /= 2) {
        if (t < h)
            red[t] += red[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / red[0];
    for (int j = t; j < C; j += 256)
        yr[j] = exp(xr[j] - m) * inv;
}
