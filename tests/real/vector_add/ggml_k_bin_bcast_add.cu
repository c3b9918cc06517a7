// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/binbcast.cu, k_bin_bcast with op_add (a 3-D
// grid: x over the row's columns in blocks of up to 128 threads, y over rows, z over the upper
// dimensions; broadcasting by modulo of the source's extents), for two same-shape contiguous
// vectors: one row of N columns, no broadcast (ne10 = ne0).
// Expected: correct.
// @expect correct
// @temper task vector_add
// @temper launch k_bin_bcast_add grid(ceil_div(N, 128), 1, 1) block(128, 1, 1) args(a, b, c, N, N)
static __device__ __forceinline__ float op_add(const float a, const float b)
{
    return a + b;
}

extern "C" __global__ void k_bin_bcast_add(const float *src0, const float *src1, float *dst, int ne0, int ne10)
{
    const int i0s = blockDim.x * blockIdx.x + threadIdx.x;
    const int i1 = blockDim.y * blockIdx.y + threadIdx.y;
    if (i0s >= ne0 || i1 >= 1)
        return;
    for (int i0 = i0s; i0 < ne0; i0 += blockDim.x * gridDim.x) {
        const int i10 = i0 % ne10;
        dst[i0] = op_add(src0 ? src0[i0] : 0.0f, src1[i10]);
    }
}
