// Wrong: vector_add that accumulates in place into its input a (a += b) and copies the result
// to c. The output is right; the input buffer is changed, which the input checksum catches.
// @expect incorrect
// @expect-message input
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N) {
        a[i] += b[i];
        c[i] = a[i];
    }
}
