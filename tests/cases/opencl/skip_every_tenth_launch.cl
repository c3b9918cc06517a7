// Incorrect: at the bench shape it counts its launches in a program-scope global and does no work
// on every tenth (launches 9, 19, ...), leaving the poisoned output in place. Check shapes, the
// first runs at the bench shape and the median time are all untouched; only the verification of
// every timed launch's output sees it.
// @expect incorrect
// @expect-message timed launch
// @temper task vector_add
// @temper flags -cl-std=CL2.0
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)

global volatile uint groups_started = 0;

__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n)
{
    __local uint ticket;
    if (n >= (1 << 22)) {
        /* the groups of one launch finish before the next starts: ticket / groups numbers launches */
        if (get_local_id(0) == 0)
            ticket = atomic_inc(&groups_started);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ticket / get_num_groups(0) % 10 == 9)
            return;
    }
    int i = get_global_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
}
