// Wrong on purpose: an exclusive scan, where cumsum is inclusive.
// @temper task row_cumsum
// @temper launch row_cumsum grid(ceil_div(rows, 64)) block(64) args(out, x, rows, cols)
__kernel void row_cumsum(__global float *out, __global const float *x, int rows, int cols)
{
    size_t r = get_global_id(0);
    if (r >= (size_t)rows)
        return;
    float s = 0.0f;
    for (int j = 0; j < cols; j++) {
        out[r * (size_t)cols + j] = s;
        s += x[r * (size_t)cols + j];
    }
}
