// CUDA twin of tests/cases/opencl/unstable_softmax.cl, translated (__global dropped, work-item ids as thread ids,
// the f-suffixed math functions). What it holds:
// Wrong: softmax without subtracting the row max: exp(x) / sum(exp(x)). Mathematically equal,
// but with x ~ normal(80,4) the row sum overflows fp32 (exp(88.7) = FLT_MAX), so the outputs
// become 0, or NaN (inf / inf) where exp(x) itself overflows. Rows of one element usually pass.
// One work-group of 256 per row, sum by local-memory tree reduction.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_unstable grid(R) block(256) args(y, x, R, C)
#define BLOCK 256
extern "C" __global__ void softmax_unstable(float *y, const float *x, int R, int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        sum += expf(xr[j]);
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    sum = buf[0];
    for (int j = t; j < C; j += BLOCK)
        yr[j] = expf(xr[j]) / sum;
}
