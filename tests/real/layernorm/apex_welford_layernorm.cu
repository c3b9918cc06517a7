// Ported from NVIDIA/apex, csrc/layer_norm_cuda_kernel.cu, cuApplyLayerNorm with cuWelfordMuSigma2
// (one row per block row of threads; each thread runs Welford's online update cuWelfordOnlineSum
// over its strided elements, the partial (count, mean, M2) are merged with cuChanOnlineSum through
// warp shuffles and then shared memory), the variance as M2 / n, and the affine output.
// Expected: correct: Welford's update never subtracts two large sums, so the N(100, 1) check shape
// keeps full precision.
// @expect correct
// @temper task layernorm
// @temper launch cuApplyLayerNorm grid(R) block(32, 4) args(y, x, gamma, beta, R, C)
__device__ void welford_online(float v, float &mu, float &m2, float &count)
{
    count += 1.0f;
    float delta = v - mu;
    mu += delta / count;
    m2 += delta * (v - mu);
}

__device__ void chan_online(float mu_b, float m2_b, float count_b, float &mu, float &m2, float &count)
{
    float n = count + count_b;
    if (n == 0.0f)
        return;
    float delta = mu_b - mu, nb_over_n = count_b / n;
    mu = mu + delta * nb_over_n;
    m2 = m2 + m2_b + delta * delta * count * nb_over_n;
    count = n;
}

extern "C" __global__ void cuApplyLayerNorm(float *out, const float *in, const float *gamma, const float *beta,
                                            int n1, int n2)
{
    __shared__ float s_mu[4], s_m2[4], s_count[4];
    int i1 = blockIdx.x, tid = threadIdx.x + threadIdx.y * 32, nthreads = 32 * 4;
    const float *x = in + (size_t)i1 * n2;
    float mu = 0.0f, m2 = 0.0f, count = 0.0f;
    for (int j = tid; j < n2; j += nthreads)
        welford_online(x[j], mu, m2, count);
    for (int o = 16; o > 0; o /= 2) {
        float mu_b = __shfl_down_sync(0xffffffffu, mu, o), m2_b = __shfl_down_sync(0xffffffffu, m2, o),
              c_b = __shfl_down_sync(0xffffffffu, count, o);
        chan_online(mu_b, m2_b, c_b, mu, m2, count);
    }
    if (threadIdx.x == 0) {
        s_mu[threadIdx.y] = mu;
        s_m2[threadIdx.y] = m2;
        s_count[threadIdx.y] = count;
    }
    __syncthreads();
    mu = s_mu[0];
    m2 = s_m2[0];
    count = s_count[0];
    for (int w = 1; w < 4; w++)
        chan_online(s_mu[w], s_m2[w], s_count[w], mu, m2, count);
    float invvar = rsqrtf(m2 / n2 + 1e-5f);
    float *o = out + (size_t)i1 * n2;
    for (int j = tid; j < n2; j += nthreads)
        o[j] = gamma[j] * (invvar * (x[j] - mu)) + beta[j];
}
