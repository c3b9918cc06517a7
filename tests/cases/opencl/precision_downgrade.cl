// Wrong: softmax that keeps its exponentials in half precision (vstore_half / vload_half
// through a 16-bit scratch word, as a kernel storing them in a half buffer would). Each
// exp(x - max) loses all but 11 significant bits (relative error up to 4.9e-4) and values below
// 6e-5 become half subnormals or zero. Otherwise the naive one-work-group-per-row baseline.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_half grid(R) block(256) args(y, x, R, C)
#define BLOCK 256

/* exp(v) rounded through half precision */
static float exp_half(float v)
{
    ushort h;
    vstore_half(exp(v), 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void softmax_half(__global float *y, __global const float *x, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    __global const float *xr = x + (size_t)get_group_id(0) * C;
    __global float *yr = y + (size_t)get_group_id(0) * C;

    float m = -INFINITY;
    for (int j = t; j < C; j += BLOCK)
        m = fmax(m, xr[j]);
    buf[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmax(buf[t], buf[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        sum += exp_half(xr[j] - m);
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = buf[0];

    for (int j = t; j < C; j += BLOCK)
        yr[j] = exp_half(xr[j] - m) / sum;
}
