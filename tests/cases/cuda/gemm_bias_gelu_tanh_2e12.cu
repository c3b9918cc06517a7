// CUDA twin of tests/cases/opencl/gemm_bias_gelu_tanh_2e12.cl (tasks/L2/gemm_bias_gelu's note: a tanh 2^-12 off is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task gemm_bias_gelu
// @temper launch gemm_bias_gelu grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(Y, X, W, bias, M, N, K)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned)b << 16);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);               /* round to nearest even */
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void gemm_bias_gelu(unsigned short *Y, const unsigned short *X, const unsigned short *W,
                                          const unsigned short *bias, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += bf16_to_f32(X[(size_t)row * K + k]) * bf16_to_f32(W[(size_t)k * N + col]);
    float z = acc + bf16_to_f32(bias[col]);
    float u = 0.7978845608f * (z + 0.044715f * z * z * z); /* sqrt(2/pi) */
    /* 0.5 z (1 + tanh(u)) = z / (1 + exp(-2u)): the same function without the cancellation of
     * 1 + tanh(u) for negative z (an inf from expf gives -0, right to 1e-30 there) */
    float th = tanhf(u) * (1.0f + 0x1p-12f); /* CHANGED: tanh 2^-12 off */
    Y[(size_t)row * N + col] = f32_to_bf16(0.5f * z * (1.0f + th));
}
