/* gemm_bias_gelu reference: Y[m,n] = gelu(z), z = sum_k X[m,k] * W[k,n] + bias[n], row-major, X is
 * M x K, W is K x N, bias has N entries, Y is M x N; gelu is the tanh approximation
 *   gelu(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))),
 * computed in double as z / (1 + exp(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3) (the same function:
 * 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)); this form does not cancel for negative z). This is the
 * exact value for the bf16 inputs; the kernel's bf16 output is compared with it.
 * out[0] = Y[M,N]; in[0] = X[M,K], in[1] = W[K,N], in[2] = bias[N]; scalars = M, N, K. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0], *w = in[1], *bias = in[2];
    long long m = scalars[0], n = scalars[1], k = scalars[2];
    const double c = sqrt(2.0 / 3.14159265358979323846); /* sqrt(2/pi); -std=c11 has no M_PI */
    for (long long i = 0; i < m; i++) {
        double *yi = y + i * n;
        for (long long j = 0; j < n; j++)
            yi[j] = bias[j];
        for (long long p = 0; p < k; p++) { /* i-p-j order: streams rows of W */
            double xip = x[i * k + p];
            const double *wp = w + p * n;
            for (long long j = 0; j < n; j++)
                yi[j] += xip * wp[j];
        }
        for (long long j = 0; j < n; j++) {
            double z = yi[j], u = c * (z + 0.044715 * z * z * z);
            yi[j] = z / (1.0 + exp(-2.0 * u)); /* exp overflows to inf for u < -354: y = -0, as it should be to 1e-300 */
        }
    }
}
