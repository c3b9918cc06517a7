// Wrong: vector_add in which work-item 0 also stores 4 MiB past the end of c (index N + 2^20),
// far beyond its guard zones; every element of c is right. On PoCL's CPU device the kernel runs
// inside the worker, where that address used to be the worker's own memory: the store landed
// there unseen, and the verdict was correct, or a crash at a later shape. Every buffer of an
// in-process device now lies between 8 GiB of inaccessible address space on each side, so the
// store faults at the first launch (the first check shape), before anything lands in the worker:
// runtime_error. (No CUDA twin: on a GPU such a store may land in another allocation unseen;
// illegal_address.cu stores outside every allocation.)
// @expect runtime_error
// @expect-message at shape n=1, public seed
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i == 0)
        c[(size_t)N + ((size_t)1 << 20)] = 1.0f;
    if (i < N)
        c[i] = a[i] + b[i];
}
