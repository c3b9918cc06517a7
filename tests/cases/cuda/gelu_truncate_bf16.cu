// CUDA twin of tests/cases/opencl/gelu_truncate_bf16.cl (tasks/L1/gelu's note, corrected: caught
// at the check shapes): the task's naive.cu with the rounding to bf16 replaced by truncation (the
// low 16 bits dropped by a shift, no rounding), the change marked CHANGED. Truncation errs by up
// to one bf16 ulp (2^-7 = 7.8e-3 relative), past the check-shape rtol 5e-3 for a good share of the
// elements.
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
    /* CHANGED: truncation, no rounding */
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void gelu_tanh(unsigned short *y, const unsigned short *x, int N)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N)
        return;
    float v = bf16_to_f32(x[i]);
    float z = 0.7978845608f * (v + 0.044715f * v * v * v); /* sqrt(2/pi) */
    y[i] = f32_to_bf16(0.5f * v * (1.0f + tanhf(z)));
}
