// Margin case (tasks/L1/conv2d's note: a sequential fp32 sum uses at most 7% (C = 64) and 17% (C =
// 256) of the allowance): the task's direct baseline (one sequential fp32 chain of 9C products per
// output), each output then moved by +0.8 of the tolerance; it and conv2d_baseline_margin_minus.cu
// pass together only if the kernel errs by at most 0.2 of the tolerance at every element. CUDA twin
// of tests/cases/opencl/conv2d_baseline_margin_plus.cl: the task's naive.cu, changed the same way.
// @expect correct
// @temper task conv2d
// @temper launch conv2d grid(ceil_div(H*W, 256) * K * N) block(256) args(y, x, w, N, C, H, W, K)
/* CHANGED (margin case): every output moved by +0.8 of the task's tolerance at its value,
 * atol 5e-4 + rtol 2e-5 |v|. This case and conv2d_baseline_margin_minus.cu both pass only if the kernel's own
 * error is within 0.2 of the tolerance at every element (up to rtol times that error). */
#define SHIFT(v) ((v) + 0.8f * (5e-4f + 2e-5f * fabsf(v)))

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
    for (int c = 0; c < C; c++) {
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
    y[((size_t)n * K + k) * H * W + p] = SHIFT(acc); /* CHANGED: moved */
}
