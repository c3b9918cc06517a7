/* flash_attention reference: the forward pass of scaled dot-product attention over
 * [B,H,S,D] tensors (queries and keys of the same length S), optionally causal, in double.
 * For batch b, head h, query row i:
 *   keys visible: j in [0, S) when causal = 0, j in [0, i] when causal = 1
 *   s_j = (q[b,h,i,:] . k[b,h,j,:]) / sqrt(D)
 *   out[b,h,i,:] = sum_j softmax(s)_j * v[b,h,j,:]
 * out is bf16: the reference returns the exact value.
 * out[0] = out[B,H,S,D]; in[0] = q, in[1] = k, in[2] = v (all [B,H,S,D]);
 * scalars = B, H, S, D, causal. */
#include <math.h>
#include <stdlib.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *o = out[0];
    const double *q = in[0], *k = in[1], *v = in[2];
    long long batch = scalars[0], heads = scalars[1], len = scalars[2], dim = scalars[3], causal = scalars[4];
    double scale = 1.0 / sqrt((double)dim);
    double *p = malloc((size_t)(len ? len : 1) * sizeof(double));
    if (!p)
        abort();
    for (long long bh = 0; bh < batch * heads; bh++) {
        const double *qb = q + bh * len * dim, *kb = k + bh * len * dim, *vb = v + bh * len * dim;
        double *ob = o + bh * len * dim;
        for (long long i = 0; i < len; i++) {
            long long n = causal ? i + 1 : len; /* keys 0 .. n-1 are visible */
            double m = -INFINITY, sum = 0.0;
            for (long long j = 0; j < n; j++) {
                double acc = 0.0;
                for (long long d = 0; d < dim; d++)
                    acc += qb[i * dim + d] * kb[j * dim + d];
                p[j] = acc * scale;
                if (p[j] > m)
                    m = p[j];
            }
            for (long long j = 0; j < n; j++) {
                p[j] = exp(p[j] - m);
                sum += p[j];
            }
            double *oi = ob + i * dim;
            for (long long d = 0; d < dim; d++)
                oi[d] = 0.0;
            for (long long j = 0; j < n; j++)
                for (long long d = 0; d < dim; d++)
                    oi[d] += p[j] / sum * vb[j * dim + d];
        }
    }
    free(p);
}
