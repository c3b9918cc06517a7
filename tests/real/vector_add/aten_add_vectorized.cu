// Ported from pytorch/pytorch, aten/src/ATen/native/cuda/CUDALoops.cuh,
// vectorized_elementwise_kernel with the add functor of BinaryOpsKernel.cu (alpha 1): each thread
// handles thread_work_size 4 elements as one float4 vector when the whole block tile is in range
// (vec_size 4 for 16-byte aligned float pointers), and the last, partial block takes the
// bounds-checked scalar path (elementwise_kernel_helper with a remaining count).
// Expected: correct: the partial tail goes through the checked path, unlike
// llmc_residual_forward_kernel2_packed.cu.
// @expect correct
// @temper task vector_add
// @temper launch vectorized_elementwise_kernel grid(ceil_div(N, 128 * 4)) block(128) args(N, c, a, b)
extern "C" __global__ void vectorized_elementwise_kernel(int N, float *out, const float *a, const float *b)
{
    const int block_work = 128 * 4;
    int remaining = N - block_work * blockIdx.x;
    size_t base = (size_t)block_work * blockIdx.x;
    if (remaining < block_work) {
        for (int k = 0; k < 4; k++) {
            int i = threadIdx.x + k * 128;
            if (i < remaining)
                out[base + i] = a[base + i] + b[base + i];
        }
        return;
    }
    size_t i = base + threadIdx.x * 4;
    float4 va = *reinterpret_cast<const float4 *>(a + i), vb = *reinterpret_cast<const float4 *>(b + i);
    *reinterpret_cast<float4 *>(out + i) = make_float4(va.x + vb.x, va.y + vb.y, va.z + vb.z, va.w + vb.w);
}
