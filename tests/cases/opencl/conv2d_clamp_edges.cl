// Wrong (tasks/L1/conv2d's note: clamping to the edge instead of zero padding fails at the 1x1
// image): the task's baseline reading the nearest edge pixel for taps outside the image.
// @expect incorrect
// @temper task conv2d
// @temper launch conv2d grid(ceil_div(H*W, 256), K, N) block(256) args(y, x, w, N, C, H, W, K)
__kernel void conv2d(__global float *y, __global const float *x, __global const float *w, int N, int C, int H,
                     int W, int K)
{
    int p = get_global_id(0);
    int k = get_global_id(1);
    int n = get_global_id(2);
    if (p >= H * W)
        return;
    int h = p / W, col = p % W;
    __global const float *xn = x + (size_t)n * C * H * W;
    __global const float *wk = w + (size_t)k * C * 9;
    float acc = 0.0f;
    for (int c = 0; c < C; c++) {
        __global const float *xc = xn + (size_t)c * H * W;
        __global const float *wc = wk + c * 9;
        for (int r = 0; r < 3; r++) {
            int hi = h + r - 1;
            hi = hi < 0 ? 0 : hi >= H ? H - 1 : hi; /* CHANGED: clamp */ if (0)
                continue;
            for (int s = 0; s < 3; s++) {
                int wi = col + s - 1;
                wi = wi < 0 ? 0 : wi >= W ? W - 1 : wi; /* CHANGED: clamp */
                    acc += xc[hi * W + wi] * wc[r * 3 + s];
            }
        }
    }
    y[((size_t)n * K + k) * H * W + p] = acc;
}
