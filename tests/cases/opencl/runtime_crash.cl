// Wrong: vector_add in which work-item 0 also stores 4 TiB past the start of c, an unmapped
// address. On PoCL's CPU device the kernel runs inside the worker process, which dies of
// SIGSEGV; on a GPU it is an illegal-address fault. Verdict runtime_error.
// @expect runtime_error
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i == 0)
        c[(size_t)1 << 40] = 0.0f;
    if (i < N)
        c[i] = a[i] + b[i];
}
