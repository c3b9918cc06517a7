/* add_layernorm reference: a residual add followed by LayerNorm over each row (eps 1e-5, biased
 * variance, gamma and beta over the columns), row-major:
 *   h[r,c] = fl32(x[r,c] + r_[r,c])            (the new residual stream, as stored in fp32)
 *   mean = sum_c h[r,c] / C,  var = sum_c (h[r,c] - mean)^2 / C
 *   y[r,c] = (h[r,c] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c]
 * The statistics and y are computed in double from the fp32 value of h, the one the kernel
 * stores and later layers read; fl32(a + b) of two fp32 values is the correctly rounded fp32 sum,
 * which C computes exactly as written below (float + float, FLT_EVAL_METHOD 0 on x86-64/AArch64).
 * out[0] = y[R,C], out[1] = h[R,C]; in[0] = x[R,C], in[1] = r[R,C], in[2] = gamma[C],
 * in[3] = beta[C]; scalars[0] = R, scalars[1] = C. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0], *h = out[1];
    const double *x = in[0], *res = in[1], *gamma = in[2], *beta = in[3];
    long long rows = scalars[0], cols = scalars[1];
    for (long long i = 0; i < rows; i++) {
        const double *xi = x + i * cols, *ri = res + i * cols;
        double *hi = h + i * cols, *yi = y + i * cols;
        double mean = 0.0, var = 0.0;
        for (long long j = 0; j < cols; j++) {
            float s = (float)xi[j] + (float)ri[j]; /* inputs are exact fp32 values */
            hi[j] = s;
            mean += hi[j];
        }
        mean /= (double)cols;
        for (long long j = 0; j < cols; j++)
            var += (hi[j] - mean) * (hi[j] - mean);
        var /= (double)cols;
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (long long j = 0; j < cols; j++)
            yi[j] = (hi[j] - mean) * rstd * gamma[j] + beta[j];
    }
}
