// Correct: vector_add with float4 loads and stores, the last N % 4 elements done one at a time.
// Buffers are at least 16-byte aligned (views start on base_align_bytes), so float4 access is legal.
// @temper task vector_add
// @temper param BLOCK 128 256
// @temper launch vector_add4 grid(ceil_div(ceil_div(N, 4), BLOCK)) block(BLOCK) args(c, a, b, N)
// @expect correct
extern "C" __global__ void vector_add4(float *__restrict__ c, const float *__restrict__ a,
                                       const float *__restrict__ b, int n)
{
    long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; /* index of a group of 4 */
    long long i = q * 4;
    if (i + 3 < n) {
        float4 va = reinterpret_cast<const float4 *>(a)[q];
        float4 vb = reinterpret_cast<const float4 *>(b)[q];
        reinterpret_cast<float4 *>(c)[q] = make_float4(va.x + vb.x, va.y + vb.y, va.z + vb.z, va.w + vb.w);
    } else {
        for (; i < n; i++) /* the tail: at most 3 elements, in the last group */
            c[i] = a[i] + b[i];
    }
}
