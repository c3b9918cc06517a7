// CUDA twin of tests/cases/opencl/transpose_missed_edge_tile.cl (tasks/L1/transpose's note: a missed edge tile is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task transpose
// @temper launch transpose grid(max(C / 16, 1), max(R / 16, 1)) block(16, 16) args(y, x, R, C)
extern "C" __global__ void transpose(float *y, const float *x, int R, int C)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= R || col >= C)
        return;
    y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
