// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_kernel2 (one block per
// row; shared-memory tree reductions for the max and, after writing exp(x - max) to the output
// and reading it back, for the sum), with its launcher's smem(block_size * 4).
// Expected: correct: a power-of-two block, a __syncthreads() before every tree step, and the
// output is written and read back by the same threads.
// @expect correct
// @temper task softmax
// @temper param BLOCK 256 128 512
// @temper launch softmax_forward_kernel2 grid(R) block(BLOCK) smem(BLOCK * 4) args(y, x, R, C)
extern "C" __global__ void softmax_forward_kernel2(float *out, const float *inp, int N, int C)
{
    extern __shared__ float shared[];
    int idx = blockIdx.x, tid = threadIdx.x, bs = blockDim.x;
    const float *x = inp + idx * C;
    float maxval = -INFINITY;
    for (int i = tid; i < C; i += bs)
        maxval = fmaxf(maxval, x[i]);
    shared[tid] = maxval;
    __syncthreads();
    for (int stride = bs / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride)
            shared[tid] = fmaxf(shared[tid], shared[tid + stride]);
    }
    float offset = shared[0];
    __syncthreads();
    for (int i = tid; i < C; i += bs)
        out[idx * C + i] = expf(x[i] - offset);
    __syncthreads();
    const float *e = out + idx * C;
    float sumval = 0.0f;
    for (int i = tid; i < C; i += bs)
        sumval += e[i];
    shared[tid] = sumval;
    __syncthreads();
    for (int stride = bs / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    __syncthreads();
    float sum = shared[0];
    for (int i = tid; i < C; i += bs)
        out[idx * C + i] = e[i] / sum;
}
