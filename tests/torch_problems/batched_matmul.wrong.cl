// Wrong on purpose: every batch multiplies the first batch of a.
// @temper task batched_matmul
// @temper launch bmm grid(ceil_div(batch * m * n, 64)) block(64) args(out, a, c, batch, m, k, n)
__kernel void bmm(__global float *out, __global const float *a, __global const float *c, int batch, int m, int k,
                  int n)
{
    size_t e = get_global_id(0);
    if (e >= (size_t)batch * (size_t)m * (size_t)n)
        return;
    size_t j = e % n, i = (e / n) % m, b = e / n / m;
    __global const float *ab = a, *cb = c + b * (size_t)k * n;
    float acc = 0.0f;
    for (int p = 0; p < k; p++)
        acc += ab[i * k + p] * cb[p * (size_t)n + j];
    out[e] = acc;
}
