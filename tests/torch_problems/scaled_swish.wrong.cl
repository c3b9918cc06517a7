// Wrong on purpose: the scale is 1.5, not the 1.75 of the problem.
// @temper task scaled_swish
// @temper launch swish grid(ceil_div(n, 256)) block(256) args(out, x, n)
__kernel void swish(__global float *out, __global const float *x, int n)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)n)
        return;
    float v = x[i];
    out[i] = 1.5f * v / (1.0f + exp(-v));
}
