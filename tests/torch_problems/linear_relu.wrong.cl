// Wrong on purpose: the bias is left out.
// @temper task linear_relu
// @temper launch linear_relu grid(ceil_div(batch * out_features, 64)) block(64) args(out, x, fc_weight, fc_bias, batch, in_features, out_features)
__kernel void linear_relu(__global float *out, __global const float *x, __global const float *w,
                          __global const float *bias, int batch, int in_features, int out_features)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)batch * (size_t)out_features)
        return;
    size_t b = i / out_features, o = i % out_features;
    float acc = 0.0f;
    for (int k = 0; k < in_features; k++)
        acc += x[b * in_features + k] * w[o * in_features + k];
    out[i] = fmax(acc, 0.0f);
}
