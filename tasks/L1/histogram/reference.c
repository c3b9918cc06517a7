/* histogram reference: counts[b] = number of i in [0, N) with x[i] == b, for the 256 values b of
 * a byte. Exact. out[0] = counts[256]; in[0] = x[N] (the byte values 0..255); scalars[0] = N. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *counts = out[0];
    const double *x = in[0];
    long long n = scalars[0];
    for (int b = 0; b < 256; b++)
        counts[b] = 0.0;
    for (long long i = 0; i < n; i++)
        counts[(int)x[i]] += 1.0;
}
