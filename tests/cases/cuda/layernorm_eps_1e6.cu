// CUDA twin of tests/cases/opencl/layernorm_eps_1e6.cl (tasks/L1/layernorm's note: eps 1e-6 is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task layernorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch layernorm_rows grid(R) block(BLOCK) args(y, x, gamma, beta, R, C)

/* Tree reduction of buf[0..BLOCK); returns the total to every thread and leaves buf free. */
__device__ float block_sum(float *buf, float v, int t)
{
    buf[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float total = buf[0];
    __syncthreads(); /* everyone has read buf[0] before it is reused */
    return total;
}

extern "C" __global__ void layernorm_rows(float *y, const float *x, const float *gamma, const float *beta, int R,
                                          int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float s = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        s += xr[j];
    float mean = block_sum(buf, s, t) / C;

    float q = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float d = xr[j] - mean;
        q += d * d;
    }
    float rstd = rsqrtf(block_sum(buf, q, t) / C + 1e-6f); /* CHANGED: eps 1e-6 */

    for (int j = t; j < C; j += BLOCK)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
