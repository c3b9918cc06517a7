// OpenCL twin of llmc_softmax_kernel2_smem_tree.cu: karpathy/llm.c, dev/cuda/softmax_forward.cu,
// softmax_forward_kernel2, with the shared-memory tree in a __local array and barrier() for
// __syncthreads().
// Expected: correct.
// @expect correct
// @temper task softmax
// @temper param BLOCK 128 64 256
// @temper launch softmax_forward_kernel2 grid(R) block(BLOCK) args(y, x, R, C)
__kernel void softmax_forward_kernel2(__global float *out, __global const float *inp, int N, int C)
{
    __local float shared[BLOCK];
    int idx = get_group_id(0), tid = get_local_id(0), bs = BLOCK;
    __global const float *x = inp + idx * C;
    float maxval = -INFINITY;
    for (int i = tid; i < C; i += bs)
        maxval = fmax(maxval, x[i]);
    shared[tid] = maxval;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = bs / 2; stride >= 1; stride /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < stride)
            shared[tid] = fmax(shared[tid], shared[tid + stride]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float offset = shared[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = tid; i < C; i += bs)
        out[idx * C + i] = exp(x[i] - offset);
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global const float *e = out + idx * C;
    float sumval = 0.0f;
    for (int i = tid; i < C; i += bs)
        sumval += e[i];
    shared[tid] = sumval;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = bs / 2; stride >= 1; stride /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = shared[0];
    for (int i = tid; i < C; i += bs)
        out[idx * C + i] = e[i] / sum;
}
