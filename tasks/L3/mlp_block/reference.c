/* mlp_block reference: a transformer MLP block without biases, y = gelu_tanh(x W1) W2, with the
 * intermediate activation rounded to bf16 (part of the spec: it is what an unfused
 * implementation stores between the two GEMMs), row-major:
 *   a[t,f] = sum_e x[t,e] * W1[e,f]
 *   h[t,f] = bf16( 0.5 * a * (1 + tanh(sqrt(2/pi) * (a + 0.044715 * a^3))) )   round to nearest even
 *   y[t,e] = sum_f h[t,f] * W2[f,e]
 * computed in double apart from that one rounding; y is bf16: the reference returns the exact
 * value. out[0] = y[T,E]; in[0] = x[T,E], in[1] = W1[E,F], in[2] = W2[F,E]; scalars = T, E, F. */
#include <math.h>
#include <stdlib.h>

void reference(double **out, const double **in, const long long *scalars);

/* x rounded to bf16's 8 significant bits, ties to even (the default rounding mode). */
static double round_bf16(double x)
{
    if (x == 0.0 || !isfinite(x))
        return x;
    int e;
    frexp(x, &e); /* |x| = f * 2^e, f in [0.5, 1) */
    if (e < -125)
        e = -125; /* below bf16's smallest normal the spacing stays 2^-133 */
    double ulp = ldexp(1.0, e - 8);
    return nearbyint(x / ulp) * ulp;
}

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0], *w1 = in[1], *w2 = in[2];
    long long tokens = scalars[0], embed = scalars[1], inner = scalars[2];
    const double c = 0.7978845608028654; /* sqrt(2/pi) */
    double *h = malloc((size_t)(inner ? inner : 1) * sizeof(double));
    if (!h)
        abort();
    for (long long t = 0; t < tokens; t++) {
        const double *xt = x + t * embed;
        double *yt = y + t * embed;
        for (long long f = 0; f < inner; f++)
            h[f] = 0.0;
        for (long long e = 0; e < embed; e++) { /* t-e-f order: streams rows of W1 */
            const double *w = w1 + e * inner;
            for (long long f = 0; f < inner; f++)
                h[f] += xt[e] * w[f];
        }
        for (long long f = 0; f < inner; f++) {
            double a = h[f];
            h[f] = round_bf16(0.5 * a * (1.0 + tanh(c * (a + 0.044715 * a * a * a))));
        }
        for (long long e = 0; e < embed; e++)
            yt[e] = 0.0;
        for (long long f = 0; f < inner; f++) {
            const double *w = w2 + f * embed;
            for (long long e = 0; e < embed; e++)
                yt[e] += h[f] * w[e];
        }
    }
    free(h);
}
