// CUDA twin of tests/cases/opencl/correct_gelu_sigmoid_fast_exp.cl, translated (work-item ids as thread ids, the
// f-suffixed math functions, __expf for native_exp). What it holds:
// Correct (tasks/L1/gelu's note: the sigmoid form with a fast exp is the accurate fast route):
// 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)) with native_exp, rounded once to nearest bf16. For
// x < -10.7, exp(-2z) overflows to inf and the quotient goes to -0, never NaN.
// @expect correct
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
    float z2 = 1.5957691216f * (v + 0.044715f * v * v * v);
    return v / (1.0f + __expf(-z2));
}

extern "C" __global__ void gelu_k(unsigned short *y, const unsigned short *x, int N)
{
    int i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (i < N)
        y[i] = to_bf16(gelu(bf16_to_f32(x[i])));
}
