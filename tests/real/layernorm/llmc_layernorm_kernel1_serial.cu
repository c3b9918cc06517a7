// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward_kernel1 (one
// thread per row: the mean, then the variance as the mean of squared deviations, two passes),
// with its mean and rstd outputs (for the backward pass) as scratch buffers.
// Expected: correct: the two-pass variance has no cancellation on the N(100, 1) check shape.
// @expect correct
// @temper task layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel1 grid(ceil_div(R, 256)) block(256) args(y, mean, rstd, x, gamma, beta, R, C)
extern "C" __global__ void layernorm_forward_kernel1(float *out, float *mean, float *rstd, const float *inp,
                                                     const float *weight, const float *bias, int N, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N)
        return;
    const float *x = inp + idx * C;
    float m = 0.0f;
    for (int i = 0; i < C; i++)
        m += x[i];
    m = m / C;
    float v = 0.0f;
    for (int i = 0; i < C; i++)
        v += (x[i] - m) * (x[i] - m);
    v = v / C;
    float s = 1.0f / sqrtf(v + 1e-5f);
    float *o = out + idx * C;
    for (int i = 0; i < C; i++)
        o[i] = s * (x[i] - m) * weight[i] + bias[i];
    mean[idx] = m;
    rstd[idx] = s;
}
