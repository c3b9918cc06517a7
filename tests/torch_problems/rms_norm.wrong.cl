// Wrong on purpose: every column is scaled by weight[0].
// @temper task rms_norm
// @temper launch rms_norm grid(ceil_div(tokens, 64)) block(64) args(out, x, weight, tokens, hidden)
__kernel void rms_norm(__global float *out, __global const float *x, __global const float *weight, int tokens,
                       int hidden)
{
    size_t t = get_global_id(0);
    if (t >= (size_t)tokens)
        return;
    __global const float *xr = x + t * (size_t)hidden;
    float ss = 0.0f;
    for (int j = 0; j < hidden; j++)
        ss += xr[j] * xr[j];
    float scale = rsqrt(ss / hidden + 1e-6f);
    for (int j = 0; j < hidden; j++)
        out[t * (size_t)hidden + j] = xr[j] * scale * weight[0];
}
