// Wrong (tasks/L1/conv2d's note: a dropped channel is caught at C = 1): the task's baseline
// summing over every channel but the last.
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
    for (int c = 0; c < C - 1; c++) { /* CHANGED: the last channel dropped */
        __global const float *xc = xn + (size_t)c * H * W;
        __global const float *wc = wk + c * 9;
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
