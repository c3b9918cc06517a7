// Correct: softmax as a two-launch plan with a scratch buffer and 64 KiB of dynamic shared
// memory (above the 48 KiB default, so the harness must opt in). The first launch stages each
// row chunk in shared memory and writes the row's max and sum of exp(x - max) into scratch; the
// second reads them and writes y, rows along the grid's x (its y and z stop at 65535).
// @expect correct
// @temper task softmax
// @temper scratch stats f32 2*R
// @temper launch row_stats grid(R) block(256) smem(65536) args(stats, x, R, C)
// @temper launch scale_rows grid(R, ceil_div(C, 256)) block(256) args(y, x, stats, R, C)

extern "C" __global__ void row_stats(float *stats, const float *x, int R, int C)
{
    extern __shared__ float tile[]; /* 16384 floats */
    __shared__ float part[256];
    int r = blockIdx.x, t = threadIdx.x;
    const float *xr = x + (size_t)r * C;
    float m = -__int_as_float(0x7f800000), s = 0.0f;
    for (int base = 0; base < C; base += 16384) {
        int n = min(16384, C - base);
        for (int j = t; j < n; j += 256)
            tile[j] = xr[base + j];
        __syncthreads();
        float cm = m;
        for (int j = t; j < n; j += 256)
            cm = fmaxf(cm, tile[j]);
        if (cm > m) { /* a thread with no element yet keeps (-inf, 0): exp(-inf - -inf) would be NaN */
            s *= expf(m - cm);
            m = cm;
        }
        for (int j = t; j < n; j += 256)
            s += expf(tile[j] - m);
        __syncthreads();
    }
    part[t] = m;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k)
            part[t] = fmaxf(part[t], part[t + k]);
        __syncthreads();
    }
    float row_max = part[0];
    __syncthreads();
    part[t] = s > 0.0f ? s * expf(m - row_max) : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k)
            part[t] += part[t + k];
        __syncthreads();
    }
    if (t == 0) {
        stats[2 * r] = row_max;
        stats[2 * r + 1] = part[0];
    }
}

extern "C" __global__ void scale_rows(float *y, const float *x, const float *stats, int R, int C)
{
    int j = blockIdx.y * blockDim.x + threadIdx.x, r = blockIdx.x; /* rows in x: grid y stops at 65535 */
    if (j < C)
        y[(size_t)r * C + j] = expf(x[(size_t)r * C + j] - stats[2 * r]) / stats[2 * r + 1];
}
