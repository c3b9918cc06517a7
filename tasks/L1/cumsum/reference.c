/* cumsum reference: row-wise inclusive prefix sum, y[r,j] = sum_{k<=j} x[r,k], row-major, in
 * double. out[0] = y[R,C]; in[0] = x[R,C]; scalars[0] = R, scalars[1] = C. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0];
    long long rows = scalars[0], cols = scalars[1];
    for (long long r = 0; r < rows; r++) {
        double acc = 0.0;
        for (long long j = 0; j < cols; j++) {
            acc += x[r * cols + j];
            y[r * cols + j] = acc;
        }
    }
}
