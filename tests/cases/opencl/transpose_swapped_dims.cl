// Wrong (tasks/L1/transpose's note: rows and columns swapped is caught on a non-square shape):
// the task's baseline launched with R and C passed the other way round; right on square shapes.
// @expect incorrect
// @temper task transpose
// @temper launch transpose grid(ceil_div(C, 16), ceil_div(R, 16)) block(16, 16) args(y, x, C, R)
__kernel void transpose(__global float *y, __global const float *x, int R, int C)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= R || col >= C)
        return;
    y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
