/* rmsnorm_rope reference: per-head RMSNorm of the query (eps 1e-5, weight w over the head
 * dimension) followed by rotary position embedding in the Llama "rotate-half" layout
 * (theta 500000), computed exactly in double; D is even. For token t, head h, with
 * q = q[t,h,:] and half = D/2:
 *   n[d] = q[d] / sqrt(sum_d' q[d']^2 / D + 1e-5) * w[d]
 *   a_i = pos[t] * 500000^(-2i/D),  i in [0, half)
 *   out[t,h,i]        = n[i] * cos(a_i) - n[i + half] * sin(a_i)
 *   out[t,h,i + half] = n[i + half] * cos(a_i) + n[i] * sin(a_i)
 * out is bf16: the kernel computes in fp32 and rounds once; the reference returns the exact value.
 * out[0] = out[T,H,D]; in[0] = q[T,H,D], in[1] = w[D], in[2] = pos[T]; scalars = T, H, D. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *o = out[0];
    const double *q = in[0], *w = in[1], *pos = in[2];
    long long tokens = scalars[0], heads = scalars[1], dim = scalars[2], half = dim / 2;
    for (long long t = 0; t < tokens; t++)
        for (long long h = 0; h < heads; h++) {
            const double *qv = q + (t * heads + h) * dim;
            double *ov = o + (t * heads + h) * dim;
            double ss = 0.0;
            for (long long d = 0; d < dim; d++)
                ss += qv[d] * qv[d];
            double rstd = 1.0 / sqrt(ss / (double)dim + 1e-5);
            for (long long i = 0; i < half; i++) {
                double a = pos[t] * pow(500000.0, -2.0 * (double)i / (double)dim);
                double lo = qv[i] * rstd * w[i], hi = qv[i + half] * rstd * w[i + half];
                ov[i] = lo * cos(a) - hi * sin(a);
                ov[i + half] = hi * cos(a) + lo * sin(a);
            }
        }
}
