// CUDA twin of tests/cases/opencl/correct_softmax_block.cl, the same kernel in CUDA.
// Correct: softmax with one block of BLOCK threads per row, in one pass over the input
// for the statistics: each thread keeps a running (max, sum of exp(x - max)) over its strided
// elements, rescaling the sum when the max grows; a shared-memory tree reduction merges the
// pairs; a second pass writes exp(x - max) / sum.
// @expect correct
// @temper task softmax
// @temper param BLOCK 64 128 256
// @temper require BLOCK <= 256
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_online grid(R) block(BLOCK) args(y, x, R, C)

/* Merges (m2, s2) into (m, s); an empty pair has m = -inf, s = 0. */
__device__ void merge(float *m, float *s, float m2, float s2)
{
    if (m2 == -INFINITY)
        return;
    if (m2 > *m) {
        *s = *s * expf(*m - m2) + s2;
        *m = m2;
    } else {
        *s += s2 * expf(m2 - *m);
    }
}

extern "C" __global__ void softmax_online(float *y, const float *x, int R, int C)
{
    __shared__ float lm[BLOCK], ls[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float m = -INFINITY, s = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        merge(&m, &s, xr[j], 1.0f);
    lm[t] = m;
    ls[t] = s;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h /= 2) {
        if (t < h) {
            m = lm[t];
            s = ls[t];
            merge(&m, &s, lm[t + h], ls[t + h]);
            lm[t] = m;
            ls[t] = s;
        }
        __syncthreads();
    }
    m = lm[0];
    float inv = 1.0f / ls[0];
    for (int j = t; j < C; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
