/* cross_entropy reference: per-row softmax cross-entropy of logits against an integer label,
 * row-major, in double:
 *   loss[r] = logsumexp(logits[r,:]) - logits[r, label[r]]
 *           = (m - logits[r, label[r]]) + log(sum_v exp(logits[r,v] - m)),  m = max_v logits[r,v]
 * Labels are in [0, V-1] (every shape draws them so).
 * out[0] = loss[R]; in[0] = logits[R,V], in[1] = label[R]; scalars[0] = R, scalars[1] = V. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *loss = out[0];
    const double *logits = in[0], *label = in[1];
    long long rows = scalars[0], vocab = scalars[1];
    for (long long r = 0; r < rows; r++) {
        const double *x = logits + r * vocab;
        double m = -INFINITY, sum = 0.0;
        for (long long v = 0; v < vocab; v++)
            if (x[v] > m)
                m = x[v];
        for (long long v = 0; v < vocab; v++)
            sum += exp(x[v] - m);
        loss[r] = (m - x[(long long)label[r]]) + log(sum);
    }
}
