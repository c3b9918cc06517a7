/* swiglu reference: y[t,f] = silu(g[t,f]) * u[t,f], silu(x) = x / (1 + exp(-x)), in double (the
 * exact value for the bf16 inputs; the kernel's bf16 output is compared with it). Written as
 * x * exp(x) / (1 + exp(x)) for x < 0 so that exp never overflows.
 * out[0] = y[T,F]; in[0] = g[T,F], in[1] = u[T,F]; scalars = T, F. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *g = in[0], *u = in[1];
    long long n = scalars[0] * scalars[1];
    for (long long i = 0; i < n; i++) {
        double x = g[i], s;
        if (x >= 0) {
            s = x / (1.0 + exp(-x));
        } else {
            double e = exp(x);
            s = x * e / (1.0 + e);
        }
        y[i] = s * u[i];
    }
}
