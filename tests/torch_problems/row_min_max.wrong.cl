// Wrong on purpose: the outputs swapped (the max first).
// @temper task row_min_max
// @temper launch row_min_max grid(ceil_div(rows, 64)) block(64) args(out0, out1, x, rows, cols)
__kernel void row_min_max(__global float *lo, __global float *hi, __global const float *x, int rows, int cols)
{
    size_t r = get_global_id(0);
    if (r >= (size_t)rows)
        return;
    float a = INFINITY, b = -INFINITY;
    for (int j = 0; j < cols; j++) {
        a = fmin(a, x[r * (size_t)cols + j]);
        b = fmax(b, x[r * (size_t)cols + j]);
    }
    lo[r] = b;
    hi[r] = a;
}
