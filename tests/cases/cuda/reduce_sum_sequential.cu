// CUDA twin of tests/cases/opencl/reduce_sum_sequential.cl, translated (__global dropped, work-item ids as thread ids,
// the f-suffixed math functions). What it holds:
// Wrong (tasks/L1/reduce_sum's note: one sequential chain over every element is caught at the
// adversarial shape N(1000, 1), off by 0.9% at N = 1000003): one work-item adds every element in
// order. With a total near 1e9 (ulp 64) and a spread of 1, every add rounds the same way.
// @expect incorrect
// @temper task reduce_sum
// @temper launch sum_sequential grid(1) block(1) args(out, x, N)
extern "C" __global__ void sum_sequential(float *out, const float *x, int N)
{
    float s = 0.0f;
    for (int i = 0; i < N; i++)
        s += x[i];
    out[0] = s;
}
