/* vector_add reference: c = a + b, in double.
 * out[0] = c[N]; in[0] = a[N], in[1] = b[N]; scalars[0] = N. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *c = out[0];
    const double *a = in[0], *b = in[1];
    long long n = scalars[0];
    for (long long i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
