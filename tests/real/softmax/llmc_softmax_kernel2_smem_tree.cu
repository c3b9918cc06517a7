// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_kernel2 (one block per
// row; shared-memory tree reductions for the max and, after writing exp(x - max) to the output
// and reading it back, for the sum), with its launcher's smem(block_size * 4).
// Expected: incorrect: a race. The max's tree ends with thread 0 writing shared[0] at stride 1,
// and every thread then reads shared[0] with no barrier between (the original has its
// __syncthreads() after the read, not before; the sum's tree has it before). A warp that reads
// early takes the max of the step before, and its elements get exp(x - m') with m' != the row's
// max, so the row is normalised wrongly. Expected correct when written (read as "a
// __syncthreads() before every tree step"); the H200 showed the race at the bench shape
// R=65536 C=4096 (2026-11-30: 71,588,622 elements wrong), while the small check shapes passed.
// @expect incorrect
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
