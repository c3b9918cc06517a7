// CUDA twin of tests/cases/opencl/correct_gelu_sigmoid_fast_exp.cl (tasks/L1/gelu's note: the
// sigmoid form with a fast exp is the accurate fast route): the task's naive.cu with
// 0.5 x (1 + tanh(z)) evaluated as x / (1 + exp(-2z)) through the fast intrinsic __expf (PTX
// ex2.approx.ftz of the argument times log2(e)), the change marked CHANGED. __expf's error grows
// with its argument (the CUDA guide bounds it by 2 + floor(|1.173 arg|) ulp): at most 106 ulp,
// 1.3e-5 relative, while exp(-2z) is finite (|arg| < 88.8); y inherits at most that relative error
// (the factor e / (1 + e) <= 1), beside the bf16 rounding's 3.9e-3: under rtol 5e-3. For
// x < -10.7, __expf overflows to inf and the quotient is -0 (|y| < 1e-36, within atol); where
// exp(-2z) is below fp32's smallest normal, .ftz gives 0 and y = x, its correctly rounded value.
// @expect correct
// @temper task gelu
// @temper launch gelu_tanh grid(ceil_div(N, 256)) block(256) args(y, x, N)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void gelu_tanh(unsigned short *y, const unsigned short *x, int N)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N)
        return;
    float v = bf16_to_f32(x[i]);
    float z2 = 1.5957691216f * (v + 0.044715f * v * v * v); /* CHANGED: 2 sqrt(2/pi), for 2z */
    y[i] = f32_to_bf16(v / (1.0f + __expf(-z2)));           /* CHANGED: the sigmoid form, fast exp */
}
