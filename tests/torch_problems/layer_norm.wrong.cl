// Wrong on purpose: the unbiased variance (hidden - 1), where LayerNorm divides by hidden.
// @temper task layer_norm
// @temper launch layer_norm grid(ceil_div(tokens, 64)) block(64) args(out, x, ln_weight, ln_bias, tokens, hidden)
__kernel void layer_norm(__global float *out, __global const float *x, __global const float *w,
                         __global const float *b, int tokens, int hidden)
{
    size_t t = get_global_id(0);
    if (t >= (size_t)tokens)
        return;
    __global const float *xr = x + t * (size_t)hidden;
    float mean = 0.0f;
    for (int j = 0; j < hidden; j++)
        mean += xr[j];
    mean /= hidden;
    float var = 0.0f;
    for (int j = 0; j < hidden; j++)
        var += (xr[j] - mean) * (xr[j] - mean);
    var /= hidden - 1;
    float inv = rsqrt(var + 1e-5f);
    for (int j = 0; j < hidden; j++)
        out[t * (size_t)hidden + j] = (xr[j] - mean) * inv * w[j] + b[j];
}
