// Wrong (tasks/L1/transpose's note: a missed edge tile leaves the NaN poison behind): the task's
// baseline with a grid rounded down, so that the partial tiles at the right and bottom edges
// never run.
// @expect incorrect
// @temper task transpose
// @temper launch transpose grid(max(C / 16, 1), max(R / 16, 1)) block(16, 16) args(y, x, R, C)
__kernel void transpose(__global float *y, __global const float *x, int R, int C)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= R || col >= C)
        return;
    y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
