/* moe_grouped_gemm reference: a grouped GEMM for mixture-of-experts routing, each token row
 * multiplied by the weight matrix of the expert it is routed to, row-major, in double:
 *   y[t,f] = sum_k x[t,k] * W[expert[t], k, f]
 * Expert indices are in [0, E-1] (every shape draws them so). y is bf16: the reference returns
 * the exact value.
 * out[0] = y[T,F]; in[0] = x[T,Hd], in[1] = W[E,Hd,F], in[2] = expert[T]; scalars = T, Hd, F, E. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0], *w = in[1], *expert = in[2];
    long long tokens = scalars[0], hidden = scalars[1], inner = scalars[2];
    for (long long t = 0; t < tokens; t++) {
        const double *xt = x + t * hidden;
        const double *we = w + (long long)expert[t] * hidden * inner;
        double *yt = y + t * inner;
        for (long long f = 0; f < inner; f++)
            yt[f] = 0.0;
        for (long long k = 0; k < hidden; k++) { /* t-k-f order: streams rows of the expert's W */
            const double *wk = we + k * inner;
            for (long long f = 0; f < inner; f++)
                yt[f] += xt[k] * wk[f];
        }
    }
}
