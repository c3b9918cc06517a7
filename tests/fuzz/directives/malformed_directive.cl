// Wrong: the launch directive is malformed (grid's parenthesis is never closed), so there is no
// launch plan to run; the kernel itself is fine. Verdict invalid, before anything is compiled.
// @expect invalid
// @temper task vector_add
// @temper launch add grid(ceil_div(N,256) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
