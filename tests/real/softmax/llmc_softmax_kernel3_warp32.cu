// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_kernel3 (one warp of
// 32 per row, __shfl_down_sync reductions, the result broadcast from lane 0), launched as its
// launcher does: block size forced to 32.
// Expected: correct: every lane takes part in every shuffle, and lane 0's value is broadcast.
// @expect correct
// @temper task softmax
// @temper launch softmax_forward_kernel3 grid(R) block(32) args(y, x, R, C)
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

extern "C" __global__ void softmax_forward_kernel3(float *out, const float *inp, int N, int C)
{
    int idx = blockIdx.x, tid = threadIdx.x;
    const float *x = inp + idx * C;
    float maxval = -INFINITY;
    for (int i = tid; i < C; i += blockDim.x)
        maxval = fmaxf(maxval, x[i]);
    float offset = __shfl_sync(0xffffffffu, warp_reduce_max(maxval), 0);
    for (int i = tid; i < C; i += blockDim.x)
        out[idx * C + i] = expf(x[i] - offset);
    const float *e = out + idx * C;
    float sumval = 0.0f;
    for (int i = tid; i < C; i += blockDim.x)
        sumval += e[i];
    float sum = __shfl_sync(0xffffffffu, warp_reduce_sum(sumval), 0);
    for (int i = tid; i < C; i += blockDim.x)
        out[idx * C + i] = e[i] / sum;
}
