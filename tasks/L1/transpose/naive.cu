// Naive baseline: one thread per element of x (x = column, y = row), 16x16 blocks, a 2-D grid
// rounded up and a bounds check for the edges. Reads of x are coalesced along a row; writes to y
// are strided by R.
// @temper task transpose
// @temper launch transpose grid(ceil_div(C, 16), ceil_div(R, 16)) block(16, 16) args(y, x, R, C)
extern "C" __global__ void transpose(float *y, const float *x, int R, int C)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= R || col >= C)
        return;
    y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
