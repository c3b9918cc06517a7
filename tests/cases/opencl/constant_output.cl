// Wrong: softmax that writes 1/C everywhere, the answer for a row of equal values. Each row
// does sum to 1, so a check of row sums alone would pass; the inputs ~ normal(80,4) are far from
// uniform.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_const grid(ceil_div(R * C, 256)) block(256) args(y, x, R, C)
__kernel void softmax_const(__global float *y, __global const float *x, int R, int C)
{
    size_t i = get_global_id(0);
    if (i < (size_t)R * C)
        y[i] = 1.0f / C;
}
