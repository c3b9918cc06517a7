// Incorrect: a shared-memory tree reduction with no __syncthreads() anywhere; warps read partial
// sums other warps have not written yet (a race that may pass a single run by luck, so the
// determinism rerun and the element-wise comparison are what catch it).
// @temper task softmax
// @temper launch softmax_racy grid(R) block(256) args(y, x, R, C)
// @expect incorrect
#define NEG_INF __int_as_float(0xff800000) /* -inf; NVRTC has no math.h */
extern "C" __global__ void softmax_racy(float *y, const float *x, int R, int C)
{
    __shared__ float red[256];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m;
    for (int s = blockDim.x / 2; s > 0; s >>= 1)
        if (threadIdx.x < s)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    m = red[0];
    float sum = 0.0f;
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        sum += expf(xr[j] - m);
    red[threadIdx.x] = sum;
    for (int s = blockDim.x / 2; s > 0; s >>= 1)
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
    float inv = 1.0f / red[0];
    for (int j = threadIdx.x; j < C; j += blockDim.x)
        yr[j] = expf(xr[j] - m) * inv;
}
