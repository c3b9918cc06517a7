// CUDA twin of tests/cases/opencl/gelu_tanh_exp_quotient.cl, translated (work-item ids as thread ids, the
// f-suffixed math functions). What it holds:
// Wrong (tasks/L1/gelu's note: caught): tanh written as (e^2z - 1) / (e^2z + 1). Past |x| of about
// 10.7, e^2z overflows fp32 to inf and the quotient is inf / inf = NaN; the adversarial check shape
// N(0, 20) puts most elements there.
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
    u += 0x7fffu + ((u >> 16) & 1u); /* nearest even */
    return (unsigned short)(u >> 16);
}

__device__ float gelu(float v)
{
    float z = 0.79788456f * (v + 0.044715f * v * v * v);
    float e = expf(2.0f * z);
    return 0.5f * v * (1.0f + (e - 1.0f) / (e + 1.0f));
}

extern "C" __global__ void gelu_k(unsigned short *y, const unsigned short *x, int N)
{
    int i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
