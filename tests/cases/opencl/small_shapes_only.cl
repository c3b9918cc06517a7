// Wrong, but only at large sizes: vector_add whose grid is capped at 8192 work-groups of 256
// without a grid-stride loop, so it covers only the first 2,097,152 elements. Every check shape
// (N <= 1,000,003) passes; the bench shapes (N = 16,777,216 on CPUs, 268,435,456 on GPUs)
// leave the rest of c unwritten, which only the bench-shape check against the baseline sees.
// @expect incorrect
// @temper task vector_add
// @temper launch add grid(min(ceil_div(N, 256), 8192)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
