// Wrong on purpose: the sum of exponentials leaves out each row's last column.
// @temper task row_logsumexp
// @temper launch row_lse grid(ceil_div(rows, 64)) block(64) args(out, x, rows, cols)
__kernel void row_lse(__global float *out, __global const float *x, int rows, int cols)
{
    size_t r = get_global_id(0);
    if (r >= (size_t)rows)
        return;
    __global const float *xr = x + r * (size_t)cols;
    float m = -INFINITY;
    for (int j = 0; j < cols; j++)
        m = fmax(m, xr[j]);
    float s = 0.0f;
    for (int j = 0; j + 1 < cols; j++)
        s += exp(xr[j] - m);
    out[r] = m + log(s);
}
