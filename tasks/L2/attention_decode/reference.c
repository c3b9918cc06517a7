/* attention_decode reference: one decode step of multi-head attention, one query per head over
 * that head's cached keys and values (no mask: every cached token is visible), in double:
 *   s[h,j] = (q[h,:] . k[h,j,:]) / sqrt(D)
 *   p[h,j] = exp(s[h,j] - max_j s[h,:]) / sum_j exp(s[h,j] - max_j s[h,:])
 *   out[h,d] = sum_j p[h,j] * v[h,j,d]
 * out is bf16: the reference returns the exact value.
 * out[0] = out[H,D]; in[0] = q[H,D], in[1] = k[H,S,D], in[2] = v[H,S,D]; scalars = H, S, D. */
#include <math.h>
#include <stdlib.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *o = out[0];
    const double *q = in[0], *k = in[1], *v = in[2];
    long long heads = scalars[0], len = scalars[1], dim = scalars[2];
    double scale = 1.0 / sqrt((double)dim);
    double *s = malloc((size_t)len * sizeof(double));
    if (!s)
        abort();
    for (long long h = 0; h < heads; h++) {
        const double *qh = q + h * dim, *kh = k + h * len * dim, *vh = v + h * len * dim;
        double *oh = o + h * dim;
        double m = -INFINITY, sum = 0.0;
        for (long long j = 0; j < len; j++) {
            double acc = 0.0;
            for (long long d = 0; d < dim; d++)
                acc += qh[d] * kh[j * dim + d];
            s[j] = acc * scale;
            if (s[j] > m)
                m = s[j];
        }
        for (long long j = 0; j < len; j++) {
            s[j] = exp(s[j] - m);
            sum += s[j];
        }
        for (long long d = 0; d < dim; d++)
            oh[d] = 0.0;
        for (long long j = 0; j < len; j++) {
            double p = s[j] / sum;
            for (long long d = 0; d < dim; d++)
                oh[d] += p * vh[j * dim + d];
        }
    }
    free(s);
}
