// Wrong: softmax without subtracting the row max: exp(x) / sum(exp(x)). Mathematically equal,
// but with x ~ normal(80,4) the row sum overflows fp32 (exp(88.7) = FLT_MAX), so the outputs
// become 0, or NaN (inf / inf) where exp(x) itself overflows. Rows of one element usually pass.
// One work-group of 256 per row, sum by local-memory tree reduction.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_unstable grid(R) block(256) args(y, x, R, C)
#define BLOCK 256
__kernel void softmax_unstable(__global float *y, __global const float *x, int R, int C)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    __global const float *xr = x + (size_t)get_group_id(0) * C;
    __global float *yr = y + (size_t)get_group_id(0) * C;

    float sum = 0.0f;
    for (int j = t; j < C; j += BLOCK)
        sum += exp(xr[j]);
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = buf[0];
    for (int j = t; j < C; j += BLOCK)
        yr[j] = exp(xr[j]) / sum;
}
