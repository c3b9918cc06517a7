/* softmax reference: y[r,:] = exp(x[r,:] - max) / sum(exp(x[r,:] - max)), row-major, in double.
 * out[0] = y[R,C]; in[0] = x[R,C]; scalars[0] = R, scalars[1] = C. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0];
    long long rows = scalars[0], cols = scalars[1];
    for (long long r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double m = -INFINITY, sum = 0.0;
        for (long long j = 0; j < cols; j++)
            if (xr[j] > m)
                m = xr[j];
        for (long long j = 0; j < cols; j++) {
            yr[j] = exp(xr[j] - m);
            sum += yr[j];
        }
        for (long long j = 0; j < cols; j++)
            yr[j] /= sum;
    }
}
