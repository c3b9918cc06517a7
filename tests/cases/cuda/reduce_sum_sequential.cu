// CUDA twin of tests/cases/opencl/reduce_sum_sequential.cl (tasks/L1/reduce_sum's note: one
// sequential chain over every element is caught at the adversarial shape N(1000, 1), off by 0.9% at
// N = 1000003): one thread adds every element in order. With a total near 1e9 (ulp 64) and a spread
// of 1, every add rounds the same way. The adds are the OpenCL case's, in the same order (each
// fp32 add rounds to nearest on both, nothing to contract), so the sum is the same bit for bit.
// On a GPU one thread waits on its loads: it loads 8 elements before adding them in order, so
// that 8 loads are in flight, and the largest check shape (N = 4194301, 16 MiB read sequentially,
// most loads hitting cache lines already fetched) stays far inside the 5 s launch limit. The
// bench shape (N = 268435456) is never run: the last check shape fails first.
// @expect incorrect
// @temper task reduce_sum
// @temper launch sum_sequential grid(1) block(1) args(out, x, N)
extern "C" __global__ void sum_sequential(float *out, const float *x, int N)
{
    float s = 0.0f;
    int i = 0;
    for (; i + 8 <= N; i += 8) {
        float v[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            v[k] = x[i + k];
#pragma unroll
        for (int k = 0; k < 8; k++)
            s += v[k];
    }
    for (; i < N; i++)
        s += x[i];
    out[0] = s;
}
