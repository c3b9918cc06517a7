// Ported from karpathy/llm.c, dev/cuda/residual_forward.cu, residual_forward_kernel2 (x128
// packets: each thread loads two 128-bit packets with __ldcs, 4 floats in an fp32 build, adds
// them and stores one; grid ceil_div(N, block * 4)).
// Expected: incorrect: as gelu_forward_kernel2, only the packet's start is checked against N, so
// for N not a multiple of 4 (N = 1, 7, 1000003 ...) the last packet is stored whole, past the end
// of c: the guard zone catches it.
// @expect incorrect
// @temper task vector_add
// @temper launch residual_forward_kernel2 grid(ceil_div(N, 256 * 4)) block(256) args(c, a, b, N)
extern "C" __global__ void residual_forward_kernel2(float *out, const float *inp1, const float *inp2, int N)
{
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (idx < N) {
        float4 p1 = __ldcs(reinterpret_cast<const float4 *>(inp1 + idx));
        float4 p2 = __ldcs(reinterpret_cast<const float4 *>(inp2 + idx));
        float4 o = make_float4(p1.x + p2.x, p1.y + p2.y, p1.z + p2.z, p1.w + p2.w);
        *reinterpret_cast<float4 *>(out + idx) = o;
    }
}
