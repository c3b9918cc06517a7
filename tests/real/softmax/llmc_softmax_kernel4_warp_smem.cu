// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_kernel4 (warp shuffles
// within warps, then thread 0 combines the warps' results in shared memory), with its launcher's
// smem(2 * block_size / 32 * 4).
// Expected: correct for any block that is a multiple of 32.
// @expect correct
// @temper task softmax
// @temper param BLOCK 256 64 1024
// @temper launch softmax_forward_kernel4 grid(R) block(BLOCK) smem(2 * BLOCK / 32 * 4) args(y, x, R, C)
__device__ float warp_reduce_max(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void softmax_forward_kernel4(float *out, const float *inp, int N, int C)
{
    extern __shared__ float shared[];
    int idx = blockIdx.x, tid = threadIdx.x, warp = tid / 32, lane = tid % 32, warps = blockDim.x / 32;
    float *maxvals = shared, *sumvals = shared + warps;
    const float *x = inp + idx * C;
    float maxval = -INFINITY;
    for (int i = tid; i < C; i += blockDim.x)
        maxval = fmaxf(maxval, x[i]);
    maxval = warp_reduce_max(maxval);
    if (lane == 0)
        maxvals[warp] = maxval;
    __syncthreads();
    if (tid == 0) {
        float v = maxvals[0];
        for (int i = 1; i < warps; i++)
            v = fmaxf(v, maxvals[i]);
        maxvals[0] = v;
    }
    __syncthreads();
    float offset = maxvals[0];
    for (int i = tid; i < C; i += blockDim.x)
        out[idx * C + i] = expf(x[i] - offset);
    const float *e = out + idx * C;
    float sumval = 0.0f;
    for (int i = tid; i < C; i += blockDim.x)
        sumval += e[i];
    sumval = warp_reduce_sum(sumval);
    if (lane == 0)
        sumvals[warp] = sumval;
    __syncthreads();
    if (tid == 0) {
        float v = sumvals[0];
        for (int i = 1; i < warps; i++)
            v += sumvals[i];
        sumvals[0] = v;
    }
    __syncthreads();
    float sum = sumvals[0];
    for (int i = tid; i < C; i += blockDim.x)
        out[idx * C + i] = e[i] / sum;
}
