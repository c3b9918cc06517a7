// Wrong: no args(...), so the launch passes the task's four arguments (c, a, b, N), but the kernel
// takes three (it reads N from nowhere). Caught when the candidate is planned against its task,
// before compiling, at the launch directive's line with both counts. Verdict invalid.
// @expect invalid
// @expect-message passes task vector_add's 4 arguments (no args(...)) but kernel add takes 3
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256)
__kernel void add(__global float *c, __global const float *a, __global const float *b)
{
    int i = get_global_id(0);
    c[i] = a[i] + b[i];
}
