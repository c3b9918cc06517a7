// OpenCL twin of llmc_gelu_forward_kernel2_packed.cu: karpathy/llm.c, dev/cuda/gelu_forward.cu,
// gelu_forward_kernel2, the 128-bit packet as vload8 / vstore8 of bf16 bits.
// Expected: incorrect: only the packet's start is checked against N, so the last packet is
// stored whole past the end of y when N is not a multiple of 8: the guard zone catches it.
// @expect incorrect
// @temper task gelu
// @temper launch gelu_forward_kernel2 grid(ceil_div(N, 128 * 8)) block(128) args(y, x, N)
static ushort gelu_bf16(ushort b)
{
    float xi = as_float((uint)b << 16);
    float cube = 0.044715f * xi * xi * xi;
    float y = 0.5f * xi * (1.0f + tanh(0.7978845608f * (xi + cube)));
    uint u = as_uint(y);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

__kernel void gelu_forward_kernel2(__global ushort *out, __global const ushort *inp, int N)
{
    int i = get_global_id(0) * 8;
    if (i < N) {
        ushort8 p = vload8(0, inp + i);
        ushort8 o = (ushort8)(gelu_bf16(p.s0), gelu_bf16(p.s1), gelu_bf16(p.s2), gelu_bf16(p.s3), gelu_bf16(p.s4),
                              gelu_bf16(p.s5), gelu_bf16(p.s6), gelu_bf16(p.s7));
        vstore8(o, 0, out + i);
    }
}
