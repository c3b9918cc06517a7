// Ported from pytorch/pytorch, aten/src/ATen/native/cuda/PersistentSoftmax.cuh,
// softmax_warp_forward (rows of at most 1024 held in registers, WARP_BATCH rows per warp, each
// lane ELEMENTS = next_pow2(C) / 32 elements, butterfly shuffles), without
// host_softmax's dispatch to the block kernel for rows longer than 1024. The template's compile-time row length is fixed here at 1024 (ELEMENTS 32);
// elements past C are padded with -inf, as ATen does.
// Expected: incorrect: this port keeps only the persistent warp kernel, as a caller that skips
// host_softmax's dispatch would: rows longer than 1024 (C = 4097, 65537) are covered only up to
// element 1023 and the rest keeps its NaN poison.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_warp_forward grid(ceil_div(R, 4)) block(32, 4) args(y, x, R, C)
#define ELEMENTS 32

extern "C" __global__ void softmax_warp_forward(float *dst, const float *src, int batch, int element_count)
{
    int row = blockIdx.x * blockDim.y + threadIdx.y, lane = threadIdx.x;
    if (row >= batch)
        return;
    float e[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) {
        int col = lane + i * 32;
        e[i] = col < element_count ? src[(size_t)row * element_count + col] : -INFINITY;
    }
    float m = e[0];
    for (int i = 1; i < ELEMENTS; i++)
        m = fmaxf(m, e[i]);
    for (int o = 16; o > 0; o /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int i = 0; i < ELEMENTS; i++) {
        e[i] = expf(e[i] - m);
        s += e[i];
    }
    for (int o = 16; o > 0; o /= 2)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int i = 0; i < ELEMENTS; i++) {
        int col = lane + i * 32;
        if (col < element_count)
            dst[(size_t)row * element_count + col] = e[i] / s;
    }
}
