// Wrong (tasks/L1/conv2d's note: rounding x and w to TF32, cuDNN's default tensor-core path, is
// caught at the 1x1 image and on most elements at C = 13): the task's baseline rounding both
// factors of every product to 10-bit significands, accumulating in fp32.
// @expect incorrect
// @temper task conv2d
// @temper launch conv2d grid(ceil_div(H*W, 256), K, N) block(256) args(y, x, w, N, C, H, W, K)
static float tf32(float f) /* CHANGED: rounds to TF32 (10-bit significand, ties away: cvt.rna.tf32.f32) */
{
    uint u = as_uint(f);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u += 0x1000u;
    return as_float(u & 0xffffe000u);
}

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
            if (hi < 0 || hi >= H)
                continue;
            for (int s = 0; s < 3; s++) {
                int wi = col + s - 1;
                if (wi >= 0 && wi < W)
                    acc += tf32(xc[hi * W + wi]) * tf32(wc[r * 3 + s]); /* CHANGED: TF32 inputs */
            }
        }
    }
    y[((size_t)n * K + k) * H * W + p] = acc;
}
