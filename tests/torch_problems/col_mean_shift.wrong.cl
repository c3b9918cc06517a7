// Wrong on purpose: the mean divides by the number of columns, not of rows.
// @temper task col_mean_shift
// @temper launch col_shift grid(ceil_div(cols, 64)) block(64) args(out, x, rows, cols)
__kernel void col_shift(__global float *out, __global const float *x, int rows, int cols)
{
    size_t c = get_global_id(0);
    if (c >= (size_t)cols)
        return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++)
        s += x[r * (size_t)cols + c];
    float mean = s / cols;
    for (int r = 0; r < rows; r++)
        out[r * (size_t)cols + c] = x[r * (size_t)cols + c] - mean;
}
