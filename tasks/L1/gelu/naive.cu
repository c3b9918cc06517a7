// Naive baseline: one thread per element, 256 per block, with a bounds check for the tail.
// bf16 data as raw bits (unsigned short); the math is fp32, the result rounded once to bf16
// (nearest even).
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
    y[i] = f32_to_bf16(0.5f * v * (1.0f + tanhf(z)));
}
