// Wrong: vector_add that adds 0 * sqrt(a[i]), meant as a no-op: it is NaN wherever a[i] < 0
// (about 2% of a ~ normal(2,1)). Everything else is exact, so only a comparison that treats NaN
// as a mismatch catches it.
// @expect incorrect
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i] + 0.0f * sqrt(a[i]);
}
