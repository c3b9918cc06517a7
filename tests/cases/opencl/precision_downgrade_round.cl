// Wrong, subtly: softmax that rounds each exp(x - max) to a 10-bit mantissa (half's precision,
// fp32's range) by bit masking, the smallest error a half-precision kernel makes: at most
// 4.9e-4 relative per element, nothing flushed to zero. Must fail rtol 2e-4 on many elements.
// One work-item per row, 64 per work-group.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_round grid(ceil_div(R, 64)) block(64) args(y, x, R, C)

/* v rounded to nearest with 10 explicit mantissa bits (13 low bits cleared) */
static float round10(float v)
{
    return as_float((as_uint(v) + 0x1000u) & 0xFFFFE000u);
}

__kernel void softmax_round(__global float *y, __global const float *x, int R, int C)
{
    int r = get_global_id(0);
    if (r >= R)
        return;
    __global const float *xr = x + (size_t)r * C;
    __global float *yr = y + (size_t)r * C;
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < C; j++)
        m = fmax(m, xr[j]);
    for (int j = 0; j < C; j++)
        sum += round10(exp(xr[j] - m));
    for (int j = 0; j < C; j++)
        yr[j] = round10(exp(xr[j] - m)) / sum;
}
