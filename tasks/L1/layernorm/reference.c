/* layernorm reference, row-major, in double: for each row r of x,
 *   mean = sum_j x[r,j] / C,  var = sum_j (x[r,j] - mean)^2 / C  (biased, as torch.nn.LayerNorm),
 *   y[r,j] = (x[r,j] - mean) / sqrt(var + 1e-5) * gamma[j] + beta[j],  eps = 1e-5 fixed.
 * out[0] = y[R,C]; in[0] = x[R,C], in[1] = gamma[C], in[2] = beta[C]; scalars[0] = R, scalars[1] = C. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0], *gamma = in[1], *beta = in[2];
    long long rows = scalars[0], cols = scalars[1];
    for (long long r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double mean = 0.0, var = 0.0;
        for (long long j = 0; j < cols; j++)
            mean += xr[j];
        mean /= (double)cols;
        for (long long j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (double)cols;
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (long long j = 0; j < cols; j++)
            yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
}
