// Ported from pytorch/pytorch, aten/src/ATen/native/cuda/PersistentSoftmax.cuh,
// softmax_warp_forward (rows of at most 1024 held in registers, WARP_BATCH rows per warp, each
// lane ELEMENTS = next_pow2(C) / 32 elements, butterfly shuffles), and
// aten/src/ATen/native/cuda/SoftMax.cu, cunn_SoftMaxForward (one block per row, for rows longer
// than 1024), dispatched as host_softmax does: the persistent warp kernel when C <= 1024, else
// the block kernel. The template's compile-time row length is fixed here at 1024 (ELEMENTS 32);
// elements past C are padded with -inf, as ATen does.
// Expected: correct: each shape takes the kernel made for it.
// @expect correct
// @temper task softmax
// @temper launch softmax_warp_forward grid(ceil_div(R, 4)) block(32, 4) args(y, x, R, C) when(C <= 1024)
// @temper launch cunn_softmax_forward grid(R) block(1024) args(y, x, C) when(1)
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

/* blockReduce of SoftMax.cu: warps first, then warp 0 over the warps' results. */
__device__ float block_reduce(float v, float *smem, bool is_max)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o /= 2) {
        float w = __shfl_down_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    __syncthreads();
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? smem[lane] : (is_max ? -INFINITY : 0.0f);
        for (int o = 16; o > 0; o /= 2) {
            float w = __shfl_down_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, w) : v + w;
        }
        if (lane == 0)
            smem[0] = v;
    }
    __syncthreads();
    return smem[0];
}

extern "C" __global__ void cunn_softmax_forward(float *output, const float *input, int classes)
{
    __shared__ float smem[32];
    const float *in = input + (size_t)blockIdx.x * classes;
    float *out = output + (size_t)blockIdx.x * classes;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < classes; i += blockDim.x)
        m = fmaxf(m, in[i]);
    m = block_reduce(m, smem, true);
    float s = 0.0f;
    for (int i = threadIdx.x; i < classes; i += blockDim.x)
        s += expf(in[i] - m);
    s = block_reduce(s, smem, false);
    for (int i = threadIdx.x; i < classes; i += blockDim.x)
        out[i] = expf(in[i] - m) / s;
}
