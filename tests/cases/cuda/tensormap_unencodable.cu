// A launch passing a tensor map at a shape TMA cannot describe: transpose's x is R x C floats, and
// at the first check shape (R = C = 1) a row is 4 bytes, where TMA needs row pitches in multiples of
// 16 bytes. No when(...) keeps that shape off the launch, so it is a runtime_error naming the rule
// and the shape, before anything runs (the kernel itself, a plain transpose, never reads the map).
// @expect runtime_error
// @expect-message tma
// @temper task transpose
// @temper launch transpose_map grid(ceil_div(C, 16), ceil_div(R, 16)) block(16, 16) args(y, x, tensormap(x, 0, 4, 4), R, C)

struct __align__(64) tmap_t {
    unsigned long long v[16];
};

extern "C" __global__ void transpose_map(float *y, const float *x, const __grid_constant__ tmap_t unused, int R, int C)
{
    const int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
    if (row < R && col < C)
        y[(size_t)col * R + row] = x[(size_t)row * C + col];
}
