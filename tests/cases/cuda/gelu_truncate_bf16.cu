// CUDA twin of tests/cases/opencl/gelu_truncate_bf16.cl, translated (work-item ids as thread ids, the
// f-suffixed math functions). What it holds:
// Wrong (tasks/L1/gelu's note, corrected: caught at the check shapes): the GELU right in fp32 but
// truncated to bf16 instead of rounded. Truncation errs by up to one bf16 ulp (2^-7 = 7.8e-3
// relative), over the check-shape rtol of 5e-3 for a good share of the elements; only the
// bench-shape comparison with the rounded baseline output allows one rounding step more.
// @expect incorrect
// @temper task gelu
// @temper launch gelu_k grid(ceil_div(N, 256)) block(256) args(y, x, N)

__device__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned)b << 16);
}

__device__ unsigned short to_bf16(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)(u >> 16); /* truncation: drops the low 16 bits */
}

__device__ float gelu(float v)
{
    float z = 0.79788456f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(z));
}

extern "C" __global__ void gelu_k(unsigned short *y, const unsigned short *x, int N)
{
    int i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
