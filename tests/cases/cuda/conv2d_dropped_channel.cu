// CUDA twin of tests/cases/opencl/conv2d_dropped_channel.cl (tasks/L1/conv2d's note: a dropped channel is caught at C = 1): the task's naive.cu with the change
// marked CHANGED.
// @expect incorrect
// @temper task conv2d
// @temper launch conv2d grid(ceil_div(H*W, 256) * K * N) block(256) args(y, x, w, N, C, H, W, K)
extern "C" __global__ void conv2d(float *y, const float *x, const float *w, int N, int C, int H, int W, int K)
{
    unsigned tiles = (unsigned)(H * W + 255) / 256, b = blockIdx.x;
    int p = (int)(b % tiles) * blockDim.x + threadIdx.x;
    int k = (int)(b / tiles % (unsigned)K);
    int n = (int)(b / tiles / (unsigned)K);
    if (p >= H * W)
        return;
    int h = p / W, col = p % W;
    const float *xn = x + (size_t)n * C * H * W;
    const float *wk = w + (size_t)k * C * 9;
    float acc = 0.0f;
    for (int c = 0; c < C - 1; c++) { /* CHANGED: the last channel dropped */
        const float *xc = xn + (size_t)c * H * W;
        const float *wc = wk + c * 9;
        for (int r = 0; r < 3; r++) {
            int hi = h + r - 1;
            if (hi < 0 || hi >= H)
                continue;
            for (int s = 0; s < 3; s++) {
                int wi = col + s - 1;
                if (wi >= 0 && wi < W)
                    acc += xc[hi * W + wi] * wc[r * 3 + s];
            }
        }
    }
    y[((size_t)n * K + k) * H * W + p] = acc;
}
