// Wrong: vector_add that tests whether a host file exists with the has-include operator, built
// by token pasting (`__has_##x`), which no scan of the words sees; the answer changes the output
// (c = a + b + 1 when /etc/passwd exists), so a client could read any path's existence off the
// verdict. Refused before compiling: verdict invalid.
// @expect invalid
// @expect-message pasting
// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
#define PROBE(x) __has_##x
#if PROBE(include)("/etc/passwd")
#define EXTRA 1.0f
#else
#define EXTRA 0.0f
#endif
__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i] + EXTRA;
}
