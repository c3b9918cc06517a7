// Naive baseline: one work-item per element of x (x = column, y = row), 16x16 work-groups, a 2-D
// grid rounded up and a bounds check for the edges. Reads of x are contiguous along a row; writes
// to y are strided by R.
// @temper task transpose
// @temper launch transpose grid(ceil_div(C, 16), ceil_div(R, 16)) block(16, 16) args(y, x, R, C)
__kernel void transpose(__global float *y, __global const float *x, int R, int C)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= R || col >= C)
        return;
    y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
