// Wrong: vector_add that never returns. Each work-item spins while a[0] == a[0], which holds for
// every non-NaN input; the compiler cannot prove that (it depends on the data) and cannot drop
// the loop, whose body writes a volatile counter. The harness must kill it: verdict timeout.
// @expect timeout
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    volatile int spins = 0;
    while (a[0] == a[0])
        spins++;
    if (i < N)
        c[i] = a[i] + b[i];
}
