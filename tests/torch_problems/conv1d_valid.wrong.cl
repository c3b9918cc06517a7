// Wrong on purpose: a flipped kernel (a true convolution), where PyTorch correlates.
// @temper task conv1d_valid
// @temper launch conv1d grid(ceil_div(batch * out_channels * (length - kernel_size + 1), 64)) block(64) args(out, x, conv_weight, conv_bias, batch, in_channels, out_channels, length, kernel_size)
__kernel void conv1d(__global float *out, __global const float *x, __global const float *w,
                     __global const float *bias, int batch, int in_channels, int out_channels, int length,
                     int kernel_size)
{
    size_t lo = (size_t)(length - kernel_size + 1);
    size_t i = get_global_id(0);
    if (i >= (size_t)batch * (size_t)out_channels * lo)
        return;
    size_t t = i % lo, o = (i / lo) % (size_t)out_channels, b = i / lo / (size_t)out_channels;
    float acc = bias[o];
    for (int c = 0; c < in_channels; c++)
        for (int j = 0; j < kernel_size; j++)
            acc += w[(o * in_channels + c) * kernel_size + j] * x[(b * in_channels + c) * (size_t)length + t + kernel_size - 1 - j];
    out[i] = acc;
}
