// Wrong: vector_add with inline assembly whose keyword no line spells: the keyword with its
// double underscores is pasted together from `__as` and `m__` by a macro, and token pasting
// happens after any scan of the words. Refused before compiling, verdict invalid, the message
// naming the pieces. (The keyword itself may not appear even in a comment: the scan does not
// follow comments.)
// @expect invalid
// @expect-message pasting
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
#define GLUE(x, y) x##y
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    GLUE(__as, m__) volatile("" ::: "memory");
    if (i < N)
        c[i] = a[i] + b[i];
}
