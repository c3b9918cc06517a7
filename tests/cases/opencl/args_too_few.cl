// Wrong: args(...) passes three arguments to a kernel that takes four (N forgotten). The OpenCL
// driver would refuse the launch only at run time; the parser counts the kernel's parameters and
// says so at the launch directive's line, with both counts. Verdict invalid.
// @expect invalid
// @expect-message passes 3 arguments but kernel add takes 4 parameters
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
