// CUDA twin of tests/cases/opencl/hgemm_drop_last_term.cl (tasks/L1/hgemm's note: a dropped last term is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task hgemm
// @temper launch hgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)

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

extern "C" __global__ void hgemm(unsigned short *C, const unsigned short *A, const unsigned short *B, int M, int N,
                                 int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K - 1; k++) /* CHANGED: the last term dropped */
        acc += bf16_to_f32(A[(size_t)row * K + k]) * bf16_to_f32(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = f32_to_bf16(acc);
}
