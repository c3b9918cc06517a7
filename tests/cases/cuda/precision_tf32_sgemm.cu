// CUDA twin of tests/cases/opencl/precision_tf32_sgemm.cl (tasks/L1/sgemm's note: rounding A and B
// to 10-bit significands fails 70-85% of the entries at every check shape with K >= 17): the
// task's naive.cu rounding A and B to 10-bit mantissas by bit masking before multiplying (what
// fp16 or TF32 inputs with fp32 accumulation do; PyTorch's allow_tf32), the change marked CHANGED.
// Their products are exact in fp32, so a contraction to fma gives the same sums as on PoCL.
// @expect incorrect
// @temper task sgemm
// @temper launch sgemm grid(ceil_div(N, 16), ceil_div(M, 16)) block(16, 16) args(C, A, B, M, N, K)
/* v rounded to nearest with 10 explicit mantissa bits (13 low bits cleared) */
__device__ __forceinline__ float round10(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xFFFFE000u);
}

extern "C" __global__ void sgemm(float *C, const float *A, const float *B, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += round10(A[(size_t)row * K + k]) * round10(B[(size_t)k * N + col]); /* CHANGED: 10-bit inputs */
    C[(size_t)row * N + col] = acc;
}
