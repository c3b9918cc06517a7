// CUDA twin of tests/cases/opencl/cross_entropy_no_max.cl (tasks/L2/cross_entropy's note: a kernel without the max is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task cross_entropy
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy grid(R) block(BLOCK) args(loss, logits, label, R, V)
extern "C" __global__ void cross_entropy(float *loss, const float *logits, const int *label, int R, int V)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    size_t row = blockIdx.x;
    const float *x = logits + row * V;

    float m = -__int_as_float(0x7f800000); /* -inf; NVRTC has no INFINITY macro */
    for (int j = t; j < V; j += BLOCK)
        m = fmaxf(m, x[j]);
    buf[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmaxf(buf[t], buf[t + s]);
        __syncthreads();
    }
    m = 0.0f; /* CHANGED: the row max not subtracted */
    __syncthreads(); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < V; j += BLOCK)
        sum += expf(x[j] - m);
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        loss[row] = (m - x[label[row]]) + logf(buf[0]);
}
