// Wrong: the launch names kernel "vector_add", but the source defines only "vec_add". The source
// compiles; the launch plan refers to nothing. Verdict invalid.
// @expect invalid
// @expect-message kernel
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void vec_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i];
}
