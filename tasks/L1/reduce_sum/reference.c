/* reduce_sum reference: out[0] = sum of x[i] for i in [0, N), accumulated in double.
 * out[0] = out[1]; in[0] = x[N]; scalars[0] = N. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    const double *x = in[0];
    long long n = scalars[0];
    double sum = 0.0;
    for (long long i = 0; i < n; i++)
        sum += x[i];
    out[0][0] = sum;
}
