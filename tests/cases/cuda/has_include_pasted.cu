// Wrong: vector_add that tests whether a host file exists with the has-include operator, built
// by token pasting (`__has_##x`), which NVRTC evaluates like nvcc; the answer changes the output
// (c = a + b + 1 when /etc/passwd exists). Refused before compiling: verdict invalid, as in
// opencl/.
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
extern "C" __global__ void add(float *c, const float *a, const float *b, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        c[i] = a[i] + b[i] + EXTRA;
}
