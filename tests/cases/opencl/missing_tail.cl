// Wrong: vector_add whose grid rounds N down to whole work-groups (N / 256, at least one), so the
// last partial work-group is never launched and c[256 * (N / 256) ..] stays unwritten whenever N
// is not a multiple of 256 (N = 1000, 4097, 65537, ...).
// @expect incorrect
// @expect-keep-going 6   (N = 1000 and 4097 with both seeds, 65537 and 1000003 with the secret seed only, as on a CPU device; with keep_going)
// @temper task vector_add
// @temper launch add grid(max(N / 256, 1)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
