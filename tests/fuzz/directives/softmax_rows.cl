// A softmax for CPUs: one work-item per row, no barriers and no local memory, so that an OpenCL
// implementation on a CPU (PoCL) runs each row as a plain loop and spreads rows across cores.
// One pass keeps a running (max, sum of exp(x - max)); a second writes exp(x - max) / sum.
// WG rows share a work-group; UNROLL rows-elements are processed per loop step.
// @temper task softmax
// @temper param WG 1 2 4 8 16 32
// @temper param UNROLL 1 2 4
// @temper launch softmax_rows_cpu grid(ceil_div(R, WG)) block(WG) args(y, x, R, C)

__kernel void softmax_rows_cpu(__global float *y, __global const float *x, int R, int C)
{
    int r = get_global_id(0);
    if (r >= R)
        return;
    __global const float *xr = x + (size_t)r * C;
    __global float *yr = y + (size_t)r * C;
    float m = -INFINITY, s = 0.0f;
    int j = 0;
    for (; j + UNROLL <= C; j += UNROLL) {
        float block_max = xr[j];
        for (int u = 1; u < UNROLL; u++)
            block_max = fmax(block_max, xr[j + u]);
        if (block_max > m) {
            s *= exp(m - block_max);
            m = block_max;
        }
        for (int u = 0; u < UNROLL; u++)
            s += exp(xr[j + u] - m);
    }
    for (; j < C; j++) {
        float v = xr[j];
        if (v > m) {
            s *= exp(m - v);
            m = v;
        }
        s += exp(v - m);
    }
    float inv = 1.0f / s;
    for (j = 0; j < C; j++)
        yr[j] = exp(xr[j] - m) * inv;
}
