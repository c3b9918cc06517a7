/* transpose reference: y[c,r] = x[r,c], row-major; y is C x R, x is R x C. Exact.
 * out[0] = y[C,R]; in[0] = x[R,C]; scalars[0] = R, scalars[1] = C. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0];
    long long rows = scalars[0], cols = scalars[1];
    for (long long r = 0; r < rows; r++)
        for (long long c = 0; c < cols; c++)
            y[c * rows + r] = x[r * cols + c];
}
