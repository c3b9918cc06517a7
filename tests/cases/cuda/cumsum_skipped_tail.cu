// CUDA twin of tests/cases/opencl/cumsum_skipped_tail.cl (tasks/L1/cumsum's note: a skipped tail is caught): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task cumsum
// @temper param BLOCK 256
// @temper launch cumsum_rows grid(R) block(BLOCK) args(y, x, R, C)
extern "C" __global__ void cumsum_rows(float *y, const float *x, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float carry = 0.0f;
    for (int c0 = 0; c0 + BLOCK <= C; c0 += BLOCK) { /* CHANGED: whole chunks only */
        int j = c0 + t;
        float v = j < C ? xr[j] : 0.0f;
        buf[t] = v;
        __syncthreads();
        for (int off = 1; off < BLOCK; off *= 2) {
            float add = t >= off ? buf[t - off] : 0.0f;
            __syncthreads(); /* every read of this step is done before the writes */
            v += add;
            buf[t] = v;
            __syncthreads();
        }
        if (j < C)
            yr[j] = carry + v;
        carry += buf[BLOCK - 1];
        __syncthreads(); /* everyone has read the total before the next chunk */
    }
}
