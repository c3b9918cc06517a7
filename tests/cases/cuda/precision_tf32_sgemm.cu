// CUDA twin of tests/cases/opencl/precision_tf32_sgemm.cl, translated (work-item ids as thread ids, the
// f-suffixed math functions). What it holds:
// Wrong, subtly: sgemm that rounds A and B to 10-bit mantissas before multiplying (what fp16
// or TF32 inputs with fp32 accumulation do; PyTorch's allow_tf32), then accumulates in fp32.
// Errors of 5e-3 at K = 17 up to 0.1 at K = 4096; must fail atol 5e-4 + rtol 2e-5.
// One work-item per element of C, as in the naive baseline.
// @expect incorrect
// @temper task sgemm
// @temper launch sgemm_tf32 grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)

/* v rounded to nearest with 10 explicit mantissa bits */
__device__ float round10(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xFFFFE000u);
}

extern "C" __global__ void sgemm_tf32(float *C, const float *A, const float *B, int M, int N, int K)
{
    int col = (blockIdx.x * (size_t)blockDim.x + threadIdx.x), row = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += round10(A[(size_t)row * K + k]) * round10(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = acc;
}
