// Wrong on purpose: the numerator leaves out the row max the denominator subtracts.
// @temper task row_softmax
// @temper launch row_softmax grid(ceil_div(batch, 64)) block(64) args(out, x, batch, features)
__kernel void row_softmax(__global float *out, __global const float *x, int batch, int features)
{
    size_t r = get_global_id(0);
    if (r >= (size_t)batch)
        return;
    __global const float *xr = x + r * (size_t)features;
    __global float *yr = out + r * (size_t)features;
    float m = -INFINITY;
    for (int j = 0; j < features; j++)
        m = fmax(m, xr[j]);
    float s = 0.0f;
    for (int j = 0; j < features; j++)
        s += exp(xr[j] - m);
    for (int j = 0; j < features; j++)
        yr[j] = exp(xr[j]) / s;
}
