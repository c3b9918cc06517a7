// Wrong: vector_add that pastes the plain inline-assembly keyword together from `a` and `sm`,
// pieces honest kernels use as names, so the word rule does not look for it in pastes. That keyword
// is one only in C++ for OpenCL and GNU modes, but every OpenCL build defines it (and its
// underscored spellings) away to an undeclared name after the candidate's options: the build fails
// on that name, and temper reports it as invalid, naming the line, not as a compile error. (The
// keyword may not appear even in a comment: the scan does not follow comments.)
// @expect invalid
// @expect-message inline assembly
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
#define GLUE(x, y) x##y
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    GLUE(a, sm)("");
    if (i < N)
        c[i] = a[i] + b[i];
}
