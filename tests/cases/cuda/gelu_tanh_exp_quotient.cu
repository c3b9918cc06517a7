// CUDA twin of tests/cases/opencl/gelu_tanh_exp_quotient.cl (tasks/L1/gelu's note: caught): the
// task's naive.cu with tanh written as (e^2z - 1) / (e^2z + 1), the change marked CHANGED. Past
// |x| of about 10.7, expf(2z) overflows fp32 to inf (as on every IEEE device) and the quotient is
// inf / inf = NaN (NVRTC's default division is IEEE); the adversarial check shape N(0, 20) puts
// most elements there.
// @expect incorrect
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
    float z = 0.7978845608f * (v + 0.044715f * v * v * v); /* sqrt(2/pi) */
    float e = expf(2.0f * z);                              /* CHANGED: tanh through exp */
    y[i] = f32_to_bf16(0.5f * v * (1.0f + (e - 1.0f) / (e + 1.0f)));
}
