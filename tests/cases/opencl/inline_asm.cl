// Wrong: vector_add with inline assembly. On PoCL's CPU device an OpenCL kernel is native code in
// the worker process, and inline assembly makes system calls there (read the environment, signal
// the parent, rewrite caches): refused before compiling, verdict invalid naming the line. Here the
// assembly is empty; it could be anything.
// @expect invalid
// @expect-message assembly
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    __asm__ volatile("" ::: "memory");
    if (i < N)
        c[i] = a[i] + b[i];
}
