/* hgemm reference: C = A * B, row-major, A is M x K, B is K x N, C is M x N, in double (the exact
 * value of the product of the bf16 inputs; the kernel's bf16 output is compared with it).
 * out[0] = C[M,N]; in[0] = A[M,K], in[1] = B[K,N]; scalars = M, N, K. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *c = out[0];
    const double *a = in[0], *b = in[1];
    long long m = scalars[0], n = scalars[1], k = scalars[2];
    for (long long i = 0; i < m; i++) {
        double *ci = c + i * n;
        for (long long j = 0; j < n; j++)
            ci[j] = 0.0;
        for (long long p = 0; p < k; p++) { /* i-p-j order: streams rows of B */
            double aip = a[i * k + p];
            const double *bp = b + p * n;
            for (long long j = 0; j < n; j++)
                ci[j] += aip * bp[j];
        }
    }
}
