/* gemv reference: y[n] = sum_k W[n,k] * x[k], W row-major N x K, in double (the exact value of
 * the product of the bf16 inputs; the kernel's bf16 output is compared with it).
 * out[0] = y[N]; in[0] = W[N,K], in[1] = x[K]; scalars = N, K. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *w = in[0], *x = in[1];
    long long n = scalars[0], k = scalars[1];
    for (long long i = 0; i < n; i++) {
        const double *wi = w + i * k;
        double acc = 0.0;
        for (long long p = 0; p < k; p++)
            acc += wi[p] * x[p];
        y[i] = acc;
    }
}
