// Wrong: passes `R * C * 100000` to an `int` parameter. It fits at the first shapes (the kernel
// ignores it and is otherwise correct), but at R = 33, C = 4097 it is 13,520,100,000, past
// INT32_MAX: temper refuses to truncate it in silence and names the expression and its value.
// @expect invalid
// @expect-message does not fit
// @temper task softmax
// @temper launch softmax_rows grid(R) block(1) args(y, x, R, C, R * C * 100000)

__kernel void softmax_rows(__global float *y, __global const float *x, int R, int C, int unused)
{
    __global const float *xr = x + (size_t)get_group_id(0) * C;
    __global float *yr = y + (size_t)get_group_id(0) * C;
    float m = -INFINITY, s = 0.0f;
    for (int j = 0; j < C; j++)
        m = fmax(m, xr[j]);
    for (int j = 0; j < C; j++)
        s += exp(xr[j] - m);
    for (int j = 0; j < C; j++)
        yr[j] = exp(xr[j] - m) / s;
}
