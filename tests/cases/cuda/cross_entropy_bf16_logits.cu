// CUDA twin of tests/cases/opencl/cross_entropy_bf16_logits.cl (tasks/L2/cross_entropy's note: bf16 logits are caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task cross_entropy
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy grid(R) block(BLOCK) args(loss, logits, label, R, V)
__device__ __forceinline__ float bf16_round(float f) /* CHANGED: rounds to bf16 (nearest even), kept in a float */
{
    unsigned u = __float_as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return __uint_as_float(u & 0xffff0000u);
}

extern "C" __global__ void cross_entropy(float *loss, const float *logits, const int *label, int R, int V)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    size_t row = blockIdx.x;
    const float *x = logits + row * V;

    float m = -__int_as_float(0x7f800000); /* -inf; NVRTC has no INFINITY macro */
    for (int j = t; j < V; j += BLOCK)
        m = fmaxf(m, bf16_round(x[j])); /* CHANGED: logits in bf16 */
    buf[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmaxf(buf[t], buf[t + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads(); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < V; j += BLOCK)
        sum += expf(bf16_round(x[j]) - m); /* CHANGED */
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        loss[row] = (m - bf16_round(x[label[row]])) /* CHANGED */ + logf(buf[0]);
}
