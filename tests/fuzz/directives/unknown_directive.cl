// Wrong: a misspelt directive ("lanch"). An unknown directive is an error, not a comment: the
// candidate is invalid rather than run without a launch plan or with a guessed one.
// @expect invalid
// @expect-message unknown
// @temper task vector_add
// @temper lanch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
