// Correct: row softmax with cooperative groups, as nvcc users write it: one block per row, each
// warp a thread_block_tile<32> reducing with cg::reduce (cg::greater, cg::plus), the warps' results
// combined through shared memory. Compiles under NVRTC only with the toolkit's include/cccl folder
// on the include path (CUDA 13 moved what cooperative_groups/reduce.h pulls in there); -INFINITY
// comes from temper's prelude, as <math.h> gives it to nvcc users.
// @temper task softmax
// @temper param BLOCK 256 128 1024
// @temper launch softmax_cg grid(R) block(BLOCK) args(y, x, R, C)
// @expect correct
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

#define WARPS (BLOCK / 32)

extern "C" __global__ void softmax_cg(float *y, const float *x, int R, int C)
{
    __shared__ float red[WARPS];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x;
    const float *xr = x + (size_t)row * C;
    float *yr = y + (size_t)row * C;

    float m = -INFINITY;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        m = fmaxf(m, xr[j]);
    m = cg::reduce(warp, m, cg::greater<float>());
    if (warp.thread_rank() == 0)
        red[warp.meta_group_rank()] = m;
    block.sync();
    m = -INFINITY;
    for (int w = 0; w < WARPS; w++)
        m = fmaxf(m, red[w]);
    block.sync();

    float s = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        s += expf(xr[j] - m);
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0)
        red[warp.meta_group_rank()] = s;
    block.sync();
    s = 0.0f;
    for (int w = 0; w < WARPS; w++)
        s += red[w];

    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
